//! Local response normalization.

use super::tensor_dims_desc;
use crate::count::N;
use crate::descriptor::{product, Descriptor};
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{KindCost, Unknown};
use profilednn_model::Primitive;

/// Forward: a sum of squares over the window (a multiply-add per tap: `2 × window`), then
/// scale, power and divide (4) per element; the window is `ls` channels across, `ls²` pixels
/// within a channel. Backward counts twice the forward. Reads src (and diff_dst), writes dst
/// (diff_src).
pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let n = product(&tensor_dims_desc(&p.problem)?);
    let ls = Descriptor::parse(&p.problem)
        .and_then(|d| d.get("ls"))
        .unwrap_or(5);
    let within = p.algorithm().unwrap_or("").contains("within");
    let window = if within {
        N::from(ls) * ls
    } else {
        N::from(ls)
    };
    let fwd = (window * 2u64 + 4u64) * n;
    let data = bits_or_unknown(p, &["src", "data"])?;
    let diff = bits(p, &["diff_dst", "diff", "dst"]).unwrap_or(data);
    let backward = p.prop_kind.is_backward();
    Ok(KindCost {
        flops: if backward { fwd * 2u64 } else { fwd },
        bias_flops: N::ZERO,
        bits: traffic(n, data) + traffic(n, diff) * if backward { 2u64 } else { 1 },
        dst_dims: None,
        dst_bits: diff,
    })
}
