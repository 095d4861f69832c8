//! Reduction (sum, mean, max, min, mul, p-norms).

use super::dims_list;
use crate::count::N;
use crate::descriptor::product;
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{KindCost, Unknown};
use profilednn_model::Primitive;

/// `SRC:DST`: reads src, writes dst. One operation per source element; mean adds a divide per
/// destination element; p-norms add a power per source element and a root per destination.
pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let (t, _) = dims_list(&p.problem)?;
    let src_n = product(&t[0]);
    let dst_n = t.get(1).map(|d| product(d)).unwrap_or(N::ONE);
    let alg = p.algorithm().unwrap_or("");
    let flops = if alg.contains("norm_lp") {
        src_n * 2u64 + dst_n
    } else if alg.contains("mean") {
        src_n + dst_n
    } else {
        src_n
    };
    let src = bits_or_unknown(p, &["src"])?;
    let dst = bits(p, &["dst"]).unwrap_or(src);
    Ok(KindCost {
        flops,
        bias_flops: N::ZERO,
        bits: traffic(src_n, src) + traffic(dst_n, dst),
        dst_dims: Some(t.get(1).cloned().unwrap_or_default()),
        dst_bits: dst,
    })
}
