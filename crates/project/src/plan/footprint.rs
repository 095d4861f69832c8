//! What one iteration of the log implies about the model: the bytes of its weight gradients
//! (what data parallelism all-reduces) and of the activations its forward pass keeps.
//!
//! Counted per *call* of one steady-state iteration, not per unique problem: ResNet's identical
//! 3×3 layers are distinct parameters with the same problem. Only what oneDNN ran is seen —
//! parameters of operators the framework runs itself (PyTorch's batch norm on plain tensors,
//! its own GEMM for linear layers) are not in the log, and the plan says so.

use profilednn_cost::{data_dims, ConvProblem, IpProblem};
use profilednn_model::{Primitive, PrimitiveKind as K, PropKind};
use serde::Serialize;
use std::sync::Arc;

/// Gradient and activation bytes of one iteration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Footprint {
    /// Bytes of the weight (and bias) gradients the backward-weights calls produce: the
    /// all-reduce's payload, and the size of the weights themselves.
    pub gradient_bytes: u64,
    /// Backward-weights calls counted.
    pub backward_weights_calls: usize,
    /// Bytes of the outputs of the forward-training calls (kept for the backward pass), at the
    /// logged mini-batch.
    pub activation_bytes: u64,
    pub forward_training_calls: usize,
}

/// A call whose sizes overflow 64 bits or cannot be read: where and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("call {position} of the iteration ({kind} {problem}): {what}")]
pub struct FootprintError {
    pub position: usize,
    pub kind: String,
    pub problem: String,
    pub what: String,
}

fn err(i: usize, p: &Primitive, what: impl Into<String>) -> FootprintError {
    FootprintError {
        position: i,
        kind: p.kind.to_string(),
        problem: p.problem.clone(),
        what: what.into(),
    }
}

fn product(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d))
}

/// Bytes of `elements` of the data type of the first memory descriptor named in `args`.
fn bytes(p: &Primitive, args: &[&str], elements: u64) -> Option<Option<u64>> {
    let Some(md) = p.mds.iter().find(|m| args.contains(&m.arg.as_str())) else {
        return Some(None);
    };
    if md.data_type.is_undef() {
        return Some(None);
    }
    let bits = u64::from(md.data_type.bits()?);
    Some(Some(elements.checked_mul(bits)?.div_ceil(8)))
}

/// Weight elements and output channels (bias elements) of a weighted problem.
fn weights(p: &Primitive) -> Result<Option<(u64, u64)>, String> {
    let deconv = p.kind.family() == K::Deconvolution;
    match p.kind.family() {
        K::Convolution | K::Deconvolution => {
            let c = ConvProblem::parse(&p.problem, deconv).map_err(|e| e.reason)?;
            let taps = product(&c.spatial.iter().map(|s| s.k).collect::<Vec<_>>());
            let n = taps
                .and_then(|t| t.checked_mul(c.oc))
                .and_then(|x| x.checked_mul(c.ic / c.g))
                .ok_or("the weight count overflows 64 bits")?;
            Ok(Some((n, c.oc)))
        }
        K::InnerProduct => {
            let c = IpProblem::parse(&p.problem).map_err(|e| e.reason)?;
            let n = product(&c.spatial)
                .and_then(|s| s.checked_mul(c.ic))
                .and_then(|x| x.checked_mul(c.oc))
                .ok_or("the weight count overflows 64 bits")?;
            Ok(Some((n, c.oc)))
        }
        _ => Ok(None),
    }
}

/// The footprint of one iteration's calls (in log order).
pub fn of_iteration(calls: &[Arc<Primitive>]) -> Result<Footprint, FootprintError> {
    let mut f = Footprint::default();
    let overflow = "the byte count overflows 64 bits";
    for (i, p) in calls.iter().enumerate() {
        if p.prop_kind == PropKind::BackwardWeights {
            let Some((w, oc)) = weights(p).map_err(|e| err(i, p, e))? else {
                continue;
            };
            let wb = bytes(p, &["wei", "diff_weights"], w)
                .ok_or_else(|| err(i, p, overflow))?
                .ok_or_else(|| err(i, p, "no weight-gradient tensor with a known data type"))?;
            let bb = bytes(p, &["bia", "diff_bias"], oc)
                .ok_or_else(|| err(i, p, overflow))?
                .unwrap_or(0);
            f.gradient_bytes = f
                .gradient_bytes
                .checked_add(wb)
                .and_then(|x| x.checked_add(bb))
                .ok_or_else(|| err(i, p, overflow))?;
            f.backward_weights_calls += 1;
        } else if p.prop_kind == PropKind::ForwardTraining {
            let Some(dims) = data_dims(p) else { continue };
            let n = product(&dims).ok_or_else(|| err(i, p, overflow))?;
            let Some(b) = bytes(p, &["dst", "data"], n).ok_or_else(|| err(i, p, overflow))? else {
                continue;
            };
            f.activation_bytes = f
                .activation_bytes
                .checked_add(b)
                .ok_or_else(|| err(i, p, overflow))?;
            f.forward_training_calls += 1;
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_whatif::testing::prim;

    #[test]
    fn conv_weight_gradients_counted_by_hand() {
        // 64→64 3×3, f32, no bias: 64·64·9·4 = 147456 bytes; with a bias of 64 f32: +256.
        let a = prim("cpu,convolution,jit:avx512_core,backward_weights,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let b = prim("cpu,convolution,jit:avx512_core,backward_weights,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:f32:a:blocked:a::f0 dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        // Grouped (depthwise-like, g2): 2 groups of 32→32 3×3: 64·32·9 elements, bf16.
        let g = prim("cpu,convolution,jit:avx512_core,backward_weights,src:bf16:a:blocked:aBcd16b::f0 wei:bf16:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:bf16:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,g2mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let f = of_iteration(&[a.clone(), a, b, g]).unwrap();
        assert_eq!(f.backward_weights_calls, 4);
        assert_eq!(
            f.gradient_bytes,
            2 * 147_456 + (147_456 + 256) + 64 * 32 * 9 * 2
        );
    }

    #[test]
    fn activations_are_forward_training_outputs() {
        // 8×64×16×16 f32 = 524288 bytes; inference calls keep nothing for a backward pass.
        let t = prim("cpu,convolution,jit:avx512_core,forward_training,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let i = prim("cpu,convolution,jit:avx512_core,forward_inference,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let f = of_iteration(&[t, i]).unwrap();
        assert_eq!(f.activation_bytes, 8 * 64 * 16 * 16 * 4);
        assert_eq!(f.forward_training_calls, 1);
        assert_eq!(f.gradient_bytes, 0);
    }

    #[test]
    fn overflow_is_an_error_naming_the_call() {
        let big = prim("cpu,convolution,jit:avx512_core,backward_weights,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic4294967296oc4294967296_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let e = of_iteration(&[big]).unwrap_err();
        assert_eq!(e.position, 0);
        assert!(e.what.contains("overflows"), "{e}");
    }
}
