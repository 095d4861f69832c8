//! Element-wise kinds: eltwise, binary, sum, prelu.

use super::{broadcast, dims_list, tensor_elements};
use crate::count::N;
use crate::descriptor::product;
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::Primitive;

/// Forward reads src and writes dst (one op per element); backward reads the data tensor and
/// diff_dst and writes diff_src (two ops: derivative and product).
pub fn eltwise(p: &Primitive) -> Result<KindCost, Unknown> {
    let n = tensor_elements(&p.problem)?;
    let data = bits_or_unknown(p, &["src", "data", "dst"])?;
    if p.prop_kind.is_backward() {
        let diff = bits(p, &["diff_dst", "diff", "diff_src"]).unwrap_or(data);
        Ok(KindCost {
            flops: n * 2u64,
            bias_flops: N::ZERO,
            bits: traffic(n, data) + traffic(n, diff) * 2u64,
            dst_dims: None,
            dst_bits: diff,
        })
    } else {
        let dst = bits(p, &["dst"]).unwrap_or(data);
        Ok(KindCost {
            flops: n,
            bias_flops: N::ZERO,
            bits: traffic(n, data) + traffic(n, dst),
            dst_dims: tensor_dims(&p.problem),
            dst_bits: dst,
        })
    }
}

fn tensor_dims(problem: &str) -> Option<Vec<u64>> {
    crate::descriptor::parse_dims(problem.split([' ', ':']).next()?)
}

/// `SRC0:SRC1[:SRC2]` (v2.3+; earlier `SRC0:SRC1 DST`): reads each source at its own size
/// and type, writes the broadcast destination; one op per destination element.
pub fn binary(p: &Primitive) -> Result<KindCost, Unknown> {
    let (t, extra) = dims_list(&p.problem)?;
    if t.len() < 2 {
        return Err(unknown(format!(
            "binary descriptor '{}': expected SRC0:SRC1",
            p.problem
        )));
    }
    let dst = extra.unwrap_or_else(|| broadcast(&t[0], &t[1]));
    let n = product(&dst);
    // Sources are positional (`src src dst` in 3.x), so take them in order.
    let listed: Vec<_> = p.mds.iter().filter(|m| !m.is_absent()).collect();
    let src_bits = |i: usize| {
        listed
            .get(i)
            .filter(|m| m.arg != "dst")
            .and_then(|m| m.data_type.bits())
            .or_else(|| bits(p, &["src"]))
    };
    let dst_bits = bits_or_unknown(p, &["dst"])?;
    let mut total = traffic(n, dst_bits);
    for (i, dims) in t.iter().enumerate() {
        total += traffic(product(dims), src_bits(i).unwrap_or(dst_bits));
    }
    Ok(KindCost {
        flops: n,
        bias_flops: N::ZERO,
        bits: total,
        dst_dims: Some(dst),
        dst_bits,
    })
}

/// `dst = Σ src_i`: reads every source, writes the destination, `n_src − 1` adds per element
/// (scales of 1 are not counted).
pub fn sum(p: &Primitive) -> Result<KindCost, Unknown> {
    let n = tensor_elements(&p.problem)?;
    let srcs: Vec<u32> = p
        .mds
        .iter()
        .filter(|m| m.arg.starts_with("src") && !m.is_absent())
        .filter_map(|m| m.data_type.bits())
        .collect();
    if srcs.is_empty() {
        return Err(unknown("sum without listed sources"));
    }
    let dst = bits(p, &["dst"]).unwrap_or(srcs[0]);
    Ok(KindCost {
        flops: n * (srcs.len() as u64 - 1),
        bias_flops: N::ZERO,
        bits: srcs.iter().map(|b| traffic(n, *b)).sum::<N>() + traffic(n, dst),
        dst_dims: None,
        dst_bits: dst,
    })
}

/// `DATA:WEI`. Forward: reads src and weights, writes dst (compare and multiply: 2 ops per
/// element). Backward: reads src, weights, diff_dst, writes diff_src and diff_wei (4 ops).
pub fn prelu(p: &Primitive) -> Result<KindCost, Unknown> {
    let (t, _) = dims_list(&p.problem)?;
    let n = product(&t[0]);
    let w = t.get(1).map(|d| product(d)).unwrap_or(N::ONE);
    let data = bits_or_unknown(p, &["src", "data"])?;
    let wei = bits(p, &["wei"]).unwrap_or(data);
    if p.prop_kind.is_backward() {
        let diff = bits(p, &["diff_dst", "diff"]).unwrap_or(data);
        Ok(KindCost {
            flops: n * 4u64,
            bias_flops: N::ZERO,
            bits: traffic(n, data) + traffic(w, wei) * 2u64 + traffic(n, diff) * 2u64,
            dst_dims: None,
            dst_bits: diff,
        })
    } else {
        let dst = bits(p, &["dst"]).unwrap_or(data);
        Ok(KindCost {
            flops: n * 2u64,
            bias_flops: N::ZERO,
            bits: traffic(n, data) + traffic(w, wei) + traffic(n, dst),
            dst_dims: Some(t[0].clone()),
            dst_bits: dst,
        })
    }
}
