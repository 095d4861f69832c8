//! Batch, layer and group normalization.

use super::{missing, tensor_dims_desc};
use crate::count::N;
use crate::descriptor::{parse_dims, product, Descriptor};
use crate::tensors::{bits, bits_or_unknown, traffic, F32_BITS};
use crate::{KindCost, Unknown};
use profilednn_model::{Primitive, PrimitiveKind, PropKind};

/// Normalization flags, from letters (`flags:CH`, 2.x+) or the numeric mask of 1.x.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NormFlags {
    pub global_stats: bool,
    pub scale: bool,
    pub shift: bool,
    pub relu: bool,
    /// RMS normalization (`M`): no mean, one statistic per group.
    pub rms: bool,
}

impl NormFlags {
    pub fn parse(s: &str) -> NormFlags {
        if let Ok(mask) = s.parse::<u64>() {
            return NormFlags {
                global_stats: mask & 0x1 != 0,
                scale: mask & 0x2 != 0 || mask & 0x8 != 0,
                shift: mask & 0x2 != 0 || mask & 0x10 != 0,
                relu: mask & 0x4 != 0,
                rms: mask & 0x40 != 0,
            };
        }
        let has = |c: char| s.contains(c);
        NormFlags {
            global_stats: has('G'),
            scale: has('C') || has('S'),
            shift: has('H') || has('S'),
            relu: has('R') || has('A'),
            rms: has('M'),
        }
    }
}

/// Elements `n`, channels `c` (length of scale/shift) and statistics `s` (count of means).
fn sizes(p: &Primitive) -> Result<(N, u64, N), Unknown> {
    let problem = &p.problem;
    match p.kind {
        PrimitiveKind::LayerNormalization => {
            let dims = parse_dims(problem).ok_or_else(|| missing(problem, "dims"))?;
            let c = *dims.last().unwrap_or(&1);
            // Statistics: one per row, the product of every dimension but the last.
            let rows = product(&dims[..dims.len().saturating_sub(1)]);
            Ok((product(&dims), c, if c == 0 { N::ZERO } else { rows }))
        }
        PrimitiveKind::GroupNormalization => {
            let d = Descriptor::parse(problem).ok_or_else(|| missing(problem, "g"))?;
            let g = d.get("g").ok_or_else(|| missing(problem, "g"))?;
            let dims = tensor_dims_desc(
                problem.trim_start_matches(|c: char| c == 'g' || c.is_ascii_digit()),
            )?;
            Ok((product(&dims), dims[1], N::from(dims[0]) * g))
        }
        _ => {
            let dims = match parse_dims(problem) {
                Some(d) if d.len() >= 2 => d,
                _ => tensor_dims_desc(problem)?,
            };
            Ok((product(&dims), dims[1], N::from(dims[1])))
        }
    }
}

pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let (n, c, s) = sizes(p)?;
    let flags = NormFlags::parse(p.aux_value("flags").unwrap_or(""));
    let data = bits_or_unknown(p, &["src", "data"])?;
    let dst = bits(p, &["dst"]).unwrap_or(data);
    let diff = bits(p, &["diff_dst", "diff", "diff_src"]).unwrap_or(data);
    let stats = s * if flags.rms { 1u64 } else { 2 };
    let params = N::from(c) * (flags.scale as u64 + flags.shift as u64);
    let backward = p.prop_kind.is_backward();
    let (flops, bits) = if !backward {
        let computes_stats = !flags.global_stats;
        let training = p.prop_kind == PropKind::ForwardTraining;
        let stats_traffic = if flags.global_stats || training {
            stats
        } else {
            N::ZERO
        };
        let ws = if flags.relu && training { n } else { N::ZERO };
        (
            // mean and variance (3 per element), normalise (2), scale (1), shift (1)
            n * if computes_stats { 3u64 } else { 0 }
                + n * 2u64
                + n * (flags.scale as u64 + flags.shift as u64),
            traffic(n, data) + traffic(n, dst) + traffic(stats_traffic + params, F32_BITS) + ws,
        )
    } else {
        let with_param_grads = p.prop_kind == PropKind::Backward;
        let param_grads = if with_param_grads { params } else { N::ZERO };
        let ws = if flags.relu { n } else { N::ZERO };
        (
            // two reductions over dy and dy*x̂ (3 per element), the data gradient (4), scale (1)
            n * if flags.global_stats { 2u64 } else { 7 } + n * flags.scale,
            traffic(n, data)
                + traffic(n, diff) * 2u64
                + traffic(
                    stats + N::from(c) * flags.scale as u64 + param_grads,
                    F32_BITS,
                )
                + ws,
        )
    };
    Ok(KindCost {
        flops,
        bias_flops: N::ZERO,
        bits,
        dst_dims: None,
        dst_bits: dst,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_letters_and_masks() {
        let f = NormFlags::parse("CH");
        assert!(f.scale && f.shift && !f.global_stats);
        let g = NormFlags::parse("3");
        assert!(g.global_stats && g.scale && g.shift);
        assert_eq!(NormFlags::parse(""), NormFlags::default());
    }
}
