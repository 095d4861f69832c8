//! Pooling (max, average with and without padding), forward and backward.

use super::conv::SpatialDim;
use crate::count::N;
use crate::descriptor::Descriptor;
use crate::tensors::{bits, bits_or_unknown, find, traffic};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::{Primitive, PropKind};

/// Dims of `mbNicC_[id…_][ih…_]iw…`; the order of `k s d p` inside a block changed across
/// versions, so fields are read by name.
fn parse(problem: &str) -> Result<(N, Vec<SpatialDim>), Unknown> {
    let d = Descriptor::parse(problem)
        .ok_or_else(|| unknown(format!("pooling descriptor '{problem}' not recognised")))?;
    let need = |k: &str| d.get(k).ok_or_else(|| super::missing(problem, k));
    let mut sp = Vec::new();
    for x in ["d", "h", "w"] {
        if !d.has(&format!("i{x}")) {
            continue;
        }
        sp.push(SpatialDim {
            i: need(&format!("i{x}"))?,
            o: need(&format!("o{x}"))?,
            k: d.get_or(&format!("k{x}"), 1),
            s: d.get_or(&format!("s{x}"), 1),
            d: d.get_or(&format!("d{x}"), 0),
            p: d.get_or(&format!("p{x}"), 0),
        });
    }
    Ok((N::from(need("mb")?) * need("ic")?, sp))
}

/// Forward: one operation per window tap inside the input (compare or add), plus one divide
/// per output for average pooling. Backward: max scatters one add per output; average
/// spreads each output over its taps.
pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let (planes, sp) = parse(&p.problem)?;
    let src_n = planes * sp.iter().map(|s| N::from(s.i)).product::<N>();
    let dst_n = planes * sp.iter().map(|s| N::from(s.o)).product::<N>();
    let taps = planes * sp.iter().map(|s| s.valid_taps(false)).product::<N>();
    let is_max = p.algorithm().unwrap_or("").contains("max");
    let src_bits = bits_or_unknown(p, &["src", "diff_src"])?;
    let dst_bits = bits(p, &["dst", "diff_dst"]).unwrap_or(src_bits);
    let ws = find(p, &["ws"])
        .and_then(|m| m.data_type.bits())
        .filter(|_| is_max)
        .map_or(N::ZERO, |b| traffic(dst_n, b));
    let backward = p.prop_kind.is_backward();
    let flops = match (backward, is_max) {
        (false, true) => taps,
        (false, false) => taps + dst_n,
        (true, true) => dst_n,
        (true, false) => taps,
    };
    let uses_ws = backward || p.prop_kind == PropKind::ForwardTraining;
    Ok(KindCost {
        flops,
        bias_flops: N::ZERO,
        bits: traffic(src_n, src_bits)
            + traffic(dst_n, dst_bits)
            + if uses_ws { ws } else { N::ZERO },
        dst_dims: None,
        dst_bits,
    })
}
