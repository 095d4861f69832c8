//! `--as bf16`: the iteration as PyTorch's CPU autocast runs it. Convolutions, deconvolutions,
//! inner products, matmuls and RNNs take bf16 inputs and write bf16 (oneDNN accumulates in
//! f32 inside), weight gradients included — what a real autocast run logs. Reorders serving
//! those calls (the run of reorders right before or after one, on one of its tensors) convert
//! bf16 data too. Normalizations, element-wise, pooling, softmax and losses stay as logged.
//!
//! The conversions autocast performs are added, as f32↔bf16 reorders priced by oneDNN:
//! - the f32 master weights to bf16, before every forward call (autocast's cache lives for one
//!   forward pass, so once per call of each layer per iteration);
//! - a weight gradient back to f32 after every backward-weights call (the cast's backward);
//! - an activation whose producer in the iteration is a logged call that stays f32, before
//!   the bf16 call reading it — and the reverse, bf16 to f32, before an f32 call reading a bf16
//!   output. A producer the log does not show (the framework's own operators) is assumed to
//!   follow its input's type, as PyTorch's do, so no cast is added for it.
//!
//! PyTorch performs these casts with `aten::to`, outside oneDNN: they are marked
//! [`Origin::AutocastCast`] so the projection can show them apart.

use super::roles::{activation_dims, is_compute, is_copy, neighbour_compute, weights_dims};
use super::{plain_tag, reorder, Call, Origin, Transformed};
use profilednn_model::{DataType, MemoryDesc, Primitive, PrimitiveKind as K, PropKind};
use std::collections::HashMap;
use std::sync::Arc;

const CAST: &str = "autocast cast";

fn f32_to_bf16(mds: &mut [MemoryDesc]) -> bool {
    let mut changed = false;
    for m in mds.iter_mut() {
        if m.data_type == DataType::F32 {
            m.data_type = DataType::Bf16;
            changed = true;
        }
    }
    changed
}

/// The layout the framework holds a tensor of `n` dimensions in, judged from a descriptor of
/// it: the descriptor's own tag when plain and explicit; else channels-last when the model's
/// activations are (`channels_last`, as `.to(memory_format=…)` moves weights too), else plain.
fn framework_tag(m: Option<&MemoryDesc>, n: usize, channels_last: bool) -> String {
    match m {
        Some(m)
            if !m.properties.contains('a')
                && !m.tag.is_empty()
                && m.tag.chars().all(|c| c.is_ascii_lowercase())
                && super::tag_ndims(&m.tag) == n =>
        {
            m.tag.clone()
        }
        _ if channels_last && n >= 4 => super::channels_last_tag(n),
        _ => plain_tag(n),
    }
}

/// Whether a call's activations are channels-last (`acdb`, `acdeb`).
fn is_channels_last(p: &Primitive) -> bool {
    arg(p, &["src", "diff_src", "data"]).is_some_and(|m| {
        let n = super::tag_ndims(&m.tag);
        n >= 4 && m.tag == super::channels_last_tag(n)
    })
}

fn cast(dims: &[u64], from: DataType, to: DataType, tag: &str) -> Call {
    Call {
        primitive: Arc::new(reorder(dims, (from, tag), (to, tag), CAST)),
        origin: Origin::AutocastCast,
        logged: None,
    }
}

fn arg<'a>(p: &'a Primitive, names: &[&str]) -> Option<&'a MemoryDesc> {
    p.tensor(names)
}

/// Step 1 of [`to_bf16`]: which calls run in bf16 — compute calls with f32 data, and the
/// logged reorders serving them (of their weights or activations).
fn runs_in_bf16(t: &Transformed, refs: &[&Primitive]) -> Vec<bool> {
    let mut bf16 = vec![false; refs.len()];
    for (i, p) in refs.iter().enumerate() {
        if is_compute(p) && p.mds.iter().any(|m| m.data_type == DataType::F32) {
            bf16[i] = true;
        }
    }
    for (i, p) in refs.iter().enumerate() {
        if p.kind.family() != K::Reorder || t.calls[i].origin != Origin::Logged {
            continue;
        }
        let Some(c) = neighbour_compute(refs, i).filter(|&c| bf16[c]) else {
            continue;
        };
        let dims = profilednn_cost::data_dims(p);
        let (a_in, a_out) = activation_dims(refs[c]);
        let serves =
            dims.is_some() && (dims == weights_dims(refs[c]) || dims == a_in || dims == a_out);
        bf16[i] = serves;
    }
    bf16
}

/// The last step of [`to_bf16`]: a gradient cast pushed right after its call must follow the
/// reorder it reads from.
fn gradient_casts_after_their_reorders(out: &mut [Call]) {
    let mut k = 0;
    while k + 1 < out.len() {
        let (a, b) = (&out[k], &out[k + 1]);
        if a.origin == Origin::AutocastCast
            && a.primitive.mds[0].data_type == DataType::Bf16
            && b.origin == Origin::Logged
            && b.primitive.kind.family() == K::Reorder
            && b.primitive.problem == a.primitive.problem
        {
            out.swap(k, k + 1);
            k += 2;
        } else {
            k += 1;
        }
    }
}

pub fn to_bf16(t: &mut Transformed) {
    let refs: Vec<&Primitive> = t.calls.iter().map(|c| &*c.primitive).collect();
    let n = refs.len();
    // 1. Which calls run in bf16.
    let bf16 = runs_in_bf16(t, &refs);
    // 2. Rewrite, adding the casts.
    let mut out: Vec<Call> = Vec::with_capacity(n + n / 2);
    // Latest producer of each activation shape: its data type once rewritten.
    let mut produced: HashMap<Vec<u64>, DataType> = HashMap::new();
    let mut added = 0usize;
    // Where each logged call landed in `out`.
    let mut position: Vec<usize> = Vec::with_capacity(n);
    let mut weight_casts = 0usize;
    let mut activation_casts = 0usize;
    let mut gradient_casts = 0usize;
    for (i, p) in refs.iter().enumerate() {
        let mut q = (*p).clone();
        if bf16[i] {
            f32_to_bf16(&mut q.mds);
        }
        let reorder = q.kind.family() == K::Reorder;
        let (a_in, a_out) = if reorder {
            (None, None)
        } else {
            activation_dims(&q)
        };
        // The activation read: cast when its producer's type differs from this call's.
        if let Some(c) = a_in
            .as_ref()
            .and_then(|d| activation_cast(&q, d, &mut produced))
        {
            out.push(c);
            activation_casts += 1;
        }
        // The master weights cast to bf16 before each forward call.
        if bf16[i]
            && !q.prop_kind.is_backward()
            && is_compute(&q)
            && add_weight_cast(&refs, i, &q, &mut out, &mut position)
        {
            weight_casts += 1;
        }
        let wgrad = bf16[i] && q.prop_kind == PropKind::BackwardWeights && is_compute(&q);
        let grad_tag = wgrad.then(|| gradient_target(&refs, i, &q));
        if let Some(d) = &a_out {
            record_output(&q, d, &mut produced);
        }
        position.push(out.len());
        out.push(Call {
            primitive: Arc::new(q),
            origin: t.calls[i].origin,
            logged: t.calls[i].logged.clone(),
        });
        if let Some((w, tag, _)) = grad_tag.filter(|g| !g.0.is_empty()) {
            // Right after the gradient's own reorder back to the framework's layout, if any:
            // the cast reads what that reorder wrote.
            out.push(cast(&w, DataType::Bf16, DataType::F32, &tag));
            gradient_casts += 1;
        }
    }
    gradient_casts_after_their_reorders(&mut out);
    added += weight_casts + activation_casts + gradient_casts;
    t.added += added;
    t.calls = out;
    t.assumptions.push(format!(
        "--as bf16: convolution/deconvolution/inner product/matmul/RNN calls and the reorders serving them run in bf16 \
         (f32 accumulation inside oneDNN), as PyTorch's CPU autocast does; normalizations, element-wise, pooling, softmax \
         and losses stay as logged; autocast's casts added as f32<->bf16 reorders: {weight_casts} f32 weights -> bf16 \
         (before each forward call), {gradient_casts} weight gradients -> f32, {activation_casts} activations whose \
         producer in the iteration stays in another type (PyTorch does these casts outside oneDNN, with aten::to)"
    ));
}

/// The cast before call `q` reading activation `d` in another type than its producer wrote
/// it in (`produced`), if it does; `produced` then records the cast copy, which later readers
/// of the same tensor read.
fn activation_cast(
    q: &Primitive,
    d: &[u64],
    produced: &mut HashMap<Vec<u64>, DataType>,
) -> Option<Call> {
    let reads = if q.prop_kind.is_backward() {
        arg(q, &["diff_dst", "diff"]).or_else(|| arg(q, &["dst"]))
    } else {
        arg(q, &["src", "data", "src_0", "src_layer"])
    };
    let (m, prev) = (reads?, produced.get(d)?);
    if *prev == m.data_type || m.data_type.is_undef() {
        return None;
    }
    let c = cast(
        d,
        prev.clone(),
        m.data_type.clone(),
        &framework_tag(Some(m), d.len(), false),
    );
    // Later readers of the same tensor read the cast copy.
    produced.insert(d.to_vec(), m.data_type.clone());
    Some(c)
}

/// The master weights' cast to bf16 before forward call `i` of `refs` (`q` once rewritten),
/// inserted into `out` before the weight reorder it feeds, else right before the call, with
/// `position` kept up to date; whether the call has weights to cast.
fn add_weight_cast(
    refs: &[&Primitive],
    i: usize,
    q: &Primitive,
    out: &mut Vec<Call>,
    position: &mut [usize],
) -> bool {
    let p = refs[i];
    let Some(w) = weights_dims(q) else {
        return false;
    };
    // The framework's weights: the source of the weight reorder just before, else
    // the call's own weights when explicit and plain.
    let before = (0..i)
        .rev()
        .take_while(|&j| refs[j].kind.family() == K::Reorder)
        .find(|&j| profilednn_cost::data_dims(refs[j]).as_deref() == Some(&w[..]));
    let tag = framework_tag(
        before
            .and_then(|j| arg(refs[j], &["src"]))
            .or_else(|| arg(p, &["wei", "weights"])),
        w.len(),
        is_channels_last(p),
    );
    // Before the weight reorder it feeds, else right before the call.
    let at = before.map_or(out.len(), |j| position[j]);
    out.insert(at, cast(&w, DataType::F32, DataType::Bf16, &tag));
    for x in position.iter_mut().filter(|x| **x >= at) {
        *x += 1;
    }
    true
}

/// Where the weight gradient of backward-weights call `i` of `refs` (`q` once rewritten) is
/// cast back to f32: its dims, its layout, and whether a weight reorder follows the call.
fn gradient_target(refs: &[&Primitive], i: usize, q: &Primitive) -> (Vec<u64>, String, bool) {
    let (n, p) = (refs.len(), refs[i]);
    let w = weights_dims(q).unwrap_or_default();
    // The gradient goes back to the framework's weights, in the layout of the weight
    // reorder right after (if any) else plain.
    let after = (i + 1..n)
        .take_while(|&j| refs[j].kind.family() == K::Reorder)
        .find(|&j| profilednn_cost::data_dims(refs[j]).as_deref() == Some(&w[..]))
        .and_then(|j| arg(refs[j], &["dst"]));
    (
        w.clone(),
        framework_tag(after, w.len(), is_channels_last(p)),
        after.is_some(),
    )
}

/// Records the type call `q` writes activation `d` in (`produced`): the type its readers'
/// casts start from.
fn record_output(q: &Primitive, d: &[u64], produced: &mut HashMap<Vec<u64>, DataType>) {
    let writes = if q.prop_kind.is_backward() {
        arg(q, &["diff_src", "diff"]).or_else(|| arg(q, &["src"]))
    } else {
        arg(q, &["dst", "data", "dst_layer"])
    };
    if let Some(m) = writes {
        if !m.data_type.is_undef() {
            produced.insert(d.to_vec(), m.data_type.clone());
        }
    }
}

/// `--as f32`: the reverse, for a log of a bf16 (autocast) run — every bf16 tensor of every
/// call in f32 (autocast's casts are not in a oneDNN log, so there is nothing to remove but the
/// reorders that become copies). An f32 log is unchanged.
pub fn to_f32(t: &mut Transformed) {
    let mut converted = 0usize;
    let mut removed = 0usize;
    let calls = std::mem::take(&mut t.calls);
    for mut c in calls {
        let mut q = (*c.primitive).clone();
        let mut changed = false;
        for m in q.mds.iter_mut() {
            if m.data_type == DataType::Bf16 {
                m.data_type = DataType::F32;
                changed = true;
            }
        }
        if changed {
            converted += 1;
            let copy = is_copy(&q);
            if copy {
                removed += 1;
                continue;
            }
            c.primitive = Arc::new(q);
        }
        t.calls.push(c);
    }
    t.removed += removed;
    t.assumptions.push(format!(
        "--as f32: every bf16 tensor in f32 ({converted} call(s) changed, {removed} reorder(s) that became copies removed);          an f32 log is unchanged; what the framework runs outside oneDNN in f32 (e.g. PyTorch's own GEMM for linear layers) is not known from the log"
    ));
}

#[cfg(test)]
mod tests {
    use super::super::testing::prim;
    use super::super::{apply as what_if, Origin, Precision, WhatIf};

    /// Each call as `kind mds problem`.
    fn lines(t: &super::super::Transformed) -> Vec<String> {
        t.calls
            .iter()
            .map(|c| {
                let p = &c.primitive;
                format!("{} {} {}", p.kind, p.mds_string(), p.problem)
            })
            .collect()
    }

    fn bf16() -> WhatIf {
        WhatIf {
            precision: Some(Precision::Bf16),
            ..Default::default()
        }
    }

    #[test]
    fn channels_last_conv_as_the_real_autocast_run_logs_it() {
        // f32 channels-last lines of PyTorch 2.15 (resnet18, batch 8) …
        let it = vec![
            prim("cpu,reorder,jit:uni,undef,src:f32::blocked:acdb::f0 dst:f32::blocked:Acdb64a::f0,attr-scratchpad:user,,64x64x3x3"),
            prim("cpu,convolution,brg_conv_fwd:avx512_core,forward_training,src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb64a::f0 bia:undef::undef:::f0 dst:f32::blocked:acdb::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"),
        ];
        let t = what_if(&bf16(), &it).unwrap();
        let got: Vec<(String, Origin)> = t
            .calls
            .iter()
            .map(|c| {
                (
                    format!(
                        "{} {} {}",
                        c.primitive.kind,
                        c.primitive.mds_string(),
                        c.primitive.problem
                    ),
                    c.origin,
                )
            })
            .collect();
        // … and what the real bf16 autocast run logs for the same layer
        // (`src:bf16::blocked:acdb::f0 wei:bf16:a:blocked:ABcd8b16a2b::f0 … dst:bf16::blocked:acdb::f0`:
        // the same descriptor but for the weights' blocked tag, which oneDNN chooses), preceded
        // by autocast's weight cast (aten::to in PyTorch).
        assert_eq!(
            got,
            [
                ("reorder src:f32::blocked:acdb::f0 dst:bf16::blocked:acdb::f0 64x64x3x3".to_string(), Origin::AutocastCast),
                ("reorder src:bf16::blocked:acdb::f0 dst:bf16::blocked:Acdb64a::f0 64x64x3x3".to_string(), Origin::Logged),
                ("convolution src:bf16::blocked:acdb::f0 wei:bf16:a:blocked:Acdb64a::f0 bia:undef::undef:::f0 dst:bf16::blocked:acdb::f0 mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1".to_string(), Origin::Logged),
            ]
        );
        assert_eq!(t.added, 1);
    }

    #[test]
    fn weight_gradient_cast_back_after_its_reorder() {
        let it = vec![
            prim("cpu,convolution,jit:avx512_core,backward_weights,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"),
            prim("cpu,reorder,jit:uni,undef,src:f32::blocked:ABcd16b16a::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,,64x64x3x3"),
        ];
        let t = what_if(&bf16(), &it).unwrap();
        let got: Vec<String> = t.calls.iter().map(|c| c.primitive.mds_string()).collect();
        assert_eq!(
            got,
            [
                "src:bf16:a:blocked:aBcd16b::f0 wei:bf16:a:blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:bf16:a:blocked:aBcd16b::f0",
                "src:bf16::blocked:ABcd16b16a::f0 dst:bf16::blocked:abcd::f0",
                "src:bf16::blocked:abcd::f0 dst:f32::blocked:abcd::f0",
            ]
        );
        assert_eq!(t.calls[2].origin, Origin::AutocastCast);
    }

    #[test]
    fn f32_normalization_between_bf16_convolutions_gets_casts_both_ways() {
        // The C training program's shape: conv -> batch norm (stays f32) -> conv.
        let it = vec![
            prim("cpu,convolution,jit:avx512_core,forward_training,src:f32::blocked:aBcd16b::f0 wei:f32::blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:f32::blocked:aBcd16b::f0,,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"),
            prim("cpu,batch_normalization,jit:avx512_core,forward_training,src:f32::blocked:aBcd16b::f0 dst:f32::blocked:aBcd16b::f0,,flags:CH,mb2ic16ih8iw8"),
            prim("cpu,convolution,jit:avx512_core,forward_training,src:f32::blocked:aBcd16b::f0 wei:f32::blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:f32::blocked:aBcd16b::f0,,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"),
        ];
        let t = what_if(&bf16(), &it).unwrap();
        assert_eq!(
            lines(&t),
            [
                // weights of the first conv, held in the logged (blocked, explicit) layout:
                // the framework's own layout is taken as plain.
                "reorder src:f32::blocked:abcd::f0 dst:bf16::blocked:abcd::f0 16x16x3x3",
                "convolution src:bf16::blocked:aBcd16b::f0 wei:bf16::blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:bf16::blocked:aBcd16b::f0 mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1",
                "reorder src:bf16::blocked:abcd::f0 dst:f32::blocked:abcd::f0 2x16x8x8",
                "batch_normalization src:f32::blocked:aBcd16b::f0 dst:f32::blocked:aBcd16b::f0 mb2ic16ih8iw8",
                "reorder src:f32::blocked:abcd::f0 dst:bf16::blocked:abcd::f0 2x16x8x8",
                "reorder src:f32::blocked:abcd::f0 dst:bf16::blocked:abcd::f0 16x16x3x3",
                "convolution src:bf16::blocked:aBcd16b::f0 wei:bf16::blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:bf16::blocked:aBcd16b::f0 mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1",
            ]
        );
        assert_eq!(t.added, 4);
    }

    #[test]
    fn an_activation_is_cast_once_for_all_its_readers() {
        // The C training program's loss: log-softmax backward (stays f32) feeds the inner
        // product's backward-data and backward-weights calls (bf16): autocast's cast runs
        // once, both read its bf16 copy.
        let it = vec![
            prim("cpu,softmax,jit:avx512_core,backward_data,src:f32::blocked:ab::f0 dst:f32::blocked:ab::f0 diff_dst:f32::blocked:ab::f0,,alg:softmax_log axis:1,8x10"),
            prim("cpu,inner_product,x64:gemm:jit,backward_data,src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:abcd::f0 bia:undef::undef::: dst:f32:a:blocked:ab::f0,,,mb8ic32ih16iw16oc10"),
            prim("cpu,inner_product,x64:gemm:jit,backward_weights,src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:abcd::f0 bia:f32:a:blocked:a::f0 dst:f32:a:blocked:ab::f0,,,mb8ic32ih16iw16oc10"),
        ];
        let t = what_if(&bf16(), &it).unwrap();
        assert_eq!(
            lines(&t),
            [
                "softmax src:f32::blocked:ab::f0 dst:f32::blocked:ab::f0 diff_dst:f32::blocked:ab::f0 8x10",
                "reorder src:f32::blocked:ab::f0 dst:bf16::blocked:ab::f0 8x10",
                "inner_product src:bf16:a:blocked:abcd::f0 wei:bf16:a:blocked:abcd::f0 bia:undef::undef:::f0 dst:bf16:a:blocked:ab::f0 mb8ic32ih16iw16oc10",
                "inner_product src:bf16:a:blocked:abcd::f0 wei:bf16:a:blocked:abcd::f0 bia:bf16:a:blocked:a::f0 dst:bf16:a:blocked:ab::f0 mb8ic32ih16iw16oc10",
                // the weight gradient back to f32, in the framework's plain layout
                "reorder src:bf16::blocked:abcd::f0 dst:f32::blocked:abcd::f0 10x32x16x16",
            ]
        );
    }

    #[test]
    fn channels_last_weights_are_cast_in_channels_last() {
        // No weight reorder logged, the weights `any`: the framework holds them as it holds
        // the activations, channels-last.
        let it = vec![prim("cpu,convolution,brg_conv_fwd:avx512_core,forward_training,src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb64a::f0 bia:undef::undef::: dst:f32::blocked:acdb::f0,,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1")];
        let t = what_if(&bf16(), &it).unwrap();
        assert_eq!(
            t.calls[0].primitive.mds_string(),
            "src:f32::blocked:acdb::f0 dst:bf16::blocked:acdb::f0"
        );
    }

    #[test]
    fn as_f32_turns_a_bf16_run_back() {
        // Real bf16 autocast channels-last lines (PyTorch 2.15, resnet18).
        let it = vec![
            prim("cpu,reorder,jit:uni,undef,src:bf16::blocked:acdb::f0 dst:bf16::blocked:ABcd8b16a2b::f0,attr-scratchpad:user,,64x64x3x3"),
            prim("cpu,convolution,jit_bf16:avx512_core,forward_training,src:bf16::blocked:acdb::f0 wei:bf16:a:blocked:ABcd8b16a2b::f0 bia:undef::undef::: dst:bf16::blocked:acdb::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"),
            prim("cpu,reorder,jit:uni,undef,src:bf16::blocked:acdb::f0 dst:f32::blocked:acdb::f0,attr-scratchpad:user,,8x64x16x16"),
        ];
        let w = WhatIf {
            precision: Some(Precision::F32),
            ..Default::default()
        };
        let t = what_if(&w, &it).unwrap();
        assert_eq!(
            lines(&t),
            [
                "reorder src:f32::blocked:acdb::f0 dst:f32::blocked:ABcd8b16a2b::f0 64x64x3x3",
                "convolution src:f32::blocked:acdb::f0 wei:f32:a:blocked:ABcd8b16a2b::f0 bia:undef::undef:::f0 dst:f32::blocked:acdb::f0 mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1",
            ]
        );
        assert_eq!(t.removed, 1);
    }
}
