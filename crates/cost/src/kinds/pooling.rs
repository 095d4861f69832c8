//! Pooling (max, average with and without padding), forward and backward.

use super::conv::SpatialDim;
use crate::count::N;
use crate::descriptor::Descriptor;
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::{Primitive, PropKind};

/// A pooling problem as its descriptor states it (`mbNicC_[id…_][ih…_]iw…`): what the cost
/// model counts and what the replay rebuilds, read in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolingProblem {
    pub mb: u64,
    pub ic: u64,
    /// Depth, height, width — only those the descriptor prints.
    pub spatial: Vec<SpatialDim>,
}

impl PoolingProblem {
    /// The order of `k s d p` inside a block changed across versions, so fields are read by
    /// name.
    pub fn parse(problem: &str) -> Result<PoolingProblem, Unknown> {
        let d = Descriptor::parse(problem)
            .ok_or_else(|| unknown(format!("pooling descriptor '{problem}' not recognised")))?;
        let need = |k: &str| d.get(k).ok_or_else(|| super::missing(problem, k));
        let mut spatial = Vec::new();
        for x in ["d", "h", "w"] {
            if !d.has(&format!("i{x}")) {
                continue;
            }
            spatial.push(SpatialDim {
                i: need(&format!("i{x}"))?,
                o: need(&format!("o{x}"))?,
                k: d.get_or(&format!("k{x}"), 1),
                s: d.get_or(&format!("s{x}"), 1),
                d: d.get_or(&format!("d{x}"), 0),
                p: d.get_or(&format!("p{x}"), 0),
            });
        }
        Ok(PoolingProblem {
            mb: need("mb")?,
            ic: need("ic")?,
            spatial,
        })
    }

    /// `[mb, ic, spatial inputs…]`.
    pub fn src_dims(&self) -> Vec<u64> {
        let mut d = vec![self.mb, self.ic];
        d.extend(self.spatial.iter().map(|s| s.i));
        d
    }

    /// `[mb, ic, spatial outputs…]`: pooling keeps the channels.
    pub fn dst_dims(&self) -> Vec<u64> {
        let mut d = vec![self.mb, self.ic];
        d.extend(self.spatial.iter().map(|s| s.o));
        d
    }
}

/// Forward: one operation per window tap inside the input (compare or add), plus one divide
/// per output for average pooling. Backward: max scatters one add per output; average
/// spreads each output over its taps.
pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let prb = PoolingProblem::parse(&p.problem)?;
    let (planes, sp) = (N::from(prb.mb) * prb.ic, &prb.spatial);
    let src_n = planes * sp.iter().map(|s| N::from(s.i)).product::<N>();
    let dst_n = planes * sp.iter().map(|s| N::from(s.o)).product::<N>();
    let taps = planes * sp.iter().map(|s| s.valid_taps(false)).product::<N>();
    let is_max = p.algorithm().unwrap_or("").contains("max");
    let src_bits = bits_or_unknown(p, &["src", "diff_src"])?;
    let dst_bits = bits(p, &["dst", "diff_dst"]).unwrap_or(src_bits);
    let ws = p
        .tensor(&["ws"])
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
