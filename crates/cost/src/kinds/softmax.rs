//! Softmax and log-softmax.

use super::tensor_elements;
use crate::count::N;
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{KindCost, Unknown};
use profilednn_model::Primitive;

/// Forward: max, subtract, exp, sum, scale (or log) — 5 operations per element; reads src,
/// writes dst. Backward: a dot product per row and the update — 4 per element; reads dst and
/// diff_dst, writes diff_src.
pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let n = tensor_elements(&p.problem)?;
    let src = bits_or_unknown(p, &["src", "data"])?;
    let dst = bits(p, &["dst"]).unwrap_or(src);
    if p.prop_kind.is_backward() {
        let diff = bits(p, &["diff_dst", "diff_src", "diff"]).unwrap_or(dst);
        Ok(KindCost {
            flops: n * 4u64,
            bias_flops: N::ZERO,
            bits: traffic(n, dst) + traffic(n, diff) * 2u64,
            dst_dims: None,
            dst_bits: diff,
        })
    } else {
        Ok(KindCost {
            flops: n * 5u64,
            bias_flops: N::ZERO,
            bits: traffic(n, src) + traffic(n, dst),
            dst_dims: None,
            dst_bits: dst,
        })
    }
}
