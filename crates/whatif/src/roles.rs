//! What each tensor of a call is: the activation flowing between primitives, or weights. The
//! transforms treat them differently (channels-last moves activations, weights become `any`;
//! the mini-batch scales activations only; autocast casts weights every iteration), and a
//! reorder's descriptor alone does not say which it converts: `64x64x3x3` may be either.

use profilednn_cost::{ConvProblem, MatmulProblem};
use profilednn_model::{MemoryDesc, Primitive, PrimitiveKind as K};

/// Kinds whose weights the library lays out (`any`) and that autocast runs in bf16.
pub fn is_compute(p: &Primitive) -> bool {
    matches!(
        p.kind.family(),
        K::Convolution | K::Deconvolution | K::InnerProduct | K::Matmul | K::Rnn
    )
}

/// Argument names of weights (and their gradients).
pub fn is_weights_arg(arg: &str) -> bool {
    matches!(arg, "wei" | "diff_wei" | "weights" | "diff_weights")
}

pub fn is_bias_arg(arg: &str) -> bool {
    matches!(arg, "bia" | "diff_bia" | "bias" | "diff_bias")
}

/// A layout tag that blocks the outermost dimension (`ABcd16b16a`, `Acdb64a`, `AcdB16a2b`):
/// only weights (output channels first) are laid out like that.
pub fn is_weights_tag(tag: &str) -> bool {
    tag.starts_with('A') || tag.starts_with("BA") || tag.starts_with('B')
}

/// Dimensions of the weights of a compute primitive (`g×oc/g×ic/g×k…` for grouped
/// convolutions), when the problem says.
pub fn weights_dims(p: &Primitive) -> Option<Vec<u64>> {
    match p.kind.family() {
        K::Convolution | K::Deconvolution => {
            let c = ConvProblem::parse(&p.problem, p.kind.family() == K::Deconvolution).ok()?;
            let grouped =
                profilednn_cost::Descriptor::parse(&p.problem).is_some_and(|x| x.has("g"));
            let mut v = if grouped {
                vec![c.g, c.oc / c.g.max(1), c.ic / c.g.max(1)]
            } else {
                vec![c.oc, c.ic]
            };
            v.extend(c.spatial.iter().map(|s| s.k));
            Some(v)
        }
        K::InnerProduct => {
            let x = profilednn_cost::Descriptor::parse(&p.problem)?;
            let mut v = vec![x.get("oc")?, x.get("ic")?];
            v.extend(["id", "ih", "iw"].iter().filter_map(|k| x.get(k)));
            Some(v)
        }
        K::Matmul => MatmulProblem::parse(&p.problem).ok().map(|m| m.wei),
        _ => None,
    }
}

/// Dimensions of the activation a call reads (`src` forward, `diff_dst` backward: same dims
/// as `dst`) and writes (`dst`, `diff_src`), when known.
pub fn activation_dims(p: &Primitive) -> (Option<Vec<u64>>, Option<Vec<u64>>) {
    let bwd = p.prop_kind.is_backward();
    match p.kind.family() {
        K::Convolution | K::Deconvolution => {
            let Ok(c) = ConvProblem::parse(&p.problem, p.kind.family() == K::Deconvolution) else {
                return (None, None);
            };
            let (s, d) = (c.src_dims(), c.dst_dims());
            if bwd {
                (Some(d), Some(s))
            } else {
                (Some(s), Some(d))
            }
        }
        K::Matmul => match MatmulProblem::parse(&p.problem) {
            Ok(m) => (Some(m.src), Some(m.dst)),
            Err(_) => (None, None),
        },
        K::InnerProduct => {
            let Some(x) = profilednn_cost::Descriptor::parse(&p.problem) else {
                return (None, None);
            };
            let (Some(mb), Some(ic), Some(oc)) = (x.get("mb"), x.get("ic"), x.get("oc")) else {
                return (None, None);
            };
            let mut s = vec![mb, ic];
            s.extend(["id", "ih", "iw"].iter().filter_map(|k| x.get(k)));
            let d = vec![mb, oc];
            if bwd {
                (Some(d), Some(s))
            } else {
                (Some(s), Some(d))
            }
        }
        _ => {
            let d = profilednn_cost::data_dims(p);
            (d.clone(), d)
        }
    }
}

/// Whether a reorder converts weights: one side is laid out as only weights are, or its
/// dimensions are the weights of the compute call next to it (the framework reorders weights
/// right before the primitive that reads them, and weight gradients right after).
pub fn reorder_is_weights(calls: &[&Primitive], i: usize) -> bool {
    let p = calls[i];
    if p.mds
        .iter()
        .any(|m| !m.is_absent() && is_weights_tag(&m.tag))
    {
        return true;
    }
    let Some(dims) = profilednn_cost::data_dims(p) else {
        return false;
    };
    neighbour_compute(calls, i).is_some_and(|c| weights_dims(calls[c]).as_deref() == Some(&dims))
}

/// The compute call that the reorder at `i` serves: the first one after the run of reorders
/// `i` belongs to, else the last one before it.
pub fn neighbour_compute(calls: &[&Primitive], i: usize) -> Option<usize> {
    let after = (i + 1..calls.len())
        .take_while(|&j| calls[j].kind.family() == K::Reorder || is_compute(calls[j]))
        .find(|&j| is_compute(calls[j]));
    after.or_else(|| {
        (0..i)
            .rev()
            .take_while(|&j| calls[j].kind.family() == K::Reorder || is_compute(calls[j]))
            .find(|&j| is_compute(calls[j]))
    })
}

/// Present descriptors of a call that hold activations (everything but weights, bias,
/// workspace, statistics and scratch).
pub fn is_activation_md(m: &MemoryDesc) -> bool {
    !m.is_absent()
        && !is_weights_arg(&m.arg)
        && !is_bias_arg(&m.arg)
        && !matches!(
            m.arg.as_str(),
            "ws" | "workspace"
                | "mean"
                | "var"
                | "variance"
                | "stats"
                | "scale"
                | "shift"
                | "scratchpad"
        )
}

/// A reorder that converts nothing: the same type, layout and strides on both sides and no
/// attribute but the scratchpad mode. A transform that makes one removes it — training would
/// not run it.
pub fn is_copy(p: &Primitive) -> bool {
    let side = |name: &str| p.tensor(&[name]);
    p.kind.family() == K::Reorder
        && p.attrs
            .items
            .iter()
            .all(|a| matches!(a, profilednn_model::Attribute::Scratchpad(_)))
        && match (side("src"), side("dst")) {
            (Some(s), Some(d)) => {
                s.data_type == d.data_type && s.tag == d.tag && s.strides == d.strides
            }
            _ => false,
        }
}
