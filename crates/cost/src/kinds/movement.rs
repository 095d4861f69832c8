//! Kinds that only move data: reorder, concat, shuffle (no arithmetic, `flops` = 0).

use super::{dims_list, tensor_elements};
use crate::count::N;
use crate::descriptor::product;
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{KindCost, Unknown};
use profilednn_model::Primitive;

/// Reads the source and writes the destination, each at its own type (a reorder is also how
/// oneDNN converts f32 ↔ bf16). Quantization scales are not counted as arithmetic.
pub fn reorder(p: &Primitive) -> Result<KindCost, Unknown> {
    let n = tensor_elements(&p.problem)?;
    let src = bits_or_unknown(p, &["src", "in"])?;
    let dst = bits(p, &["dst", "out"]).unwrap_or(src);
    Ok(KindCost {
        flops: N::ZERO,
        bias_flops: N::ZERO,
        bits: traffic(n, src) + traffic(n, dst),
        dst_dims: None,
        dst_bits: dst,
    })
}

/// `SRC0:SRC1:…` (v1.x–v2.2 append ` DST`): every source read, the destination written.
pub fn concat(p: &Primitive) -> Result<KindCost, Unknown> {
    let (t, _) = dims_list(&p.problem)?;
    let srcs: Vec<_> = p
        .mds
        .iter()
        .filter(|m| m.arg.starts_with("src") && !m.is_absent())
        .collect();
    let dst = bits_or_unknown(p, &["dst"])?;
    let mut total = N::ZERO;
    let mut n = N::ZERO;
    for (i, dims) in t.iter().enumerate() {
        let e = product(dims);
        n += e;
        let b = srcs.get(i).and_then(|m| m.data_type.bits()).unwrap_or(dst);
        total += traffic(e, b);
    }
    Ok(KindCost {
        flops: N::ZERO,
        bias_flops: N::ZERO,
        bits: total + traffic(n, dst),
        dst_dims: None,
        dst_bits: dst,
    })
}

/// Reads one tensor and writes its permutation (forward and backward alike).
pub fn shuffle(p: &Primitive) -> Result<KindCost, Unknown> {
    let n = tensor_elements(&p.problem)?;
    let b = bits_or_unknown(p, &["src", "data", "diff"])?;
    Ok(KindCost {
        flops: N::ZERO,
        bias_flops: N::ZERO,
        bits: traffic(n, b) * 2u64,
        dst_dims: None,
        dst_bits: b,
    })
}
