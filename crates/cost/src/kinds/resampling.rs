//! Resampling (nearest, linear).

use crate::count::N;
use crate::descriptor::{parse_dims, product, Descriptor};
use crate::tensors::{bits, bits_or_unknown, traffic};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::Primitive;

/// Source and destination dims from `mbNicC_[idIodO_][ihIohO_]iwIowO` (v2.3+) or
/// `SRCDIMS DSTDIMS` (v1.x–v2.2).
fn sizes(problem: &str) -> Result<(N, N, usize), Unknown> {
    if let Some((a, b)) = problem.split_once(' ') {
        if let (Some(s), Some(d)) = (parse_dims(a), parse_dims(b.trim())) {
            return Ok((product(&s), product(&d), s.len().saturating_sub(2)));
        }
    }
    let d = Descriptor::parse(problem)
        .ok_or_else(|| unknown(format!("resampling descriptor '{problem}' not recognised")))?;
    let need = |k: &str| d.get(k).ok_or_else(|| super::missing(problem, k));
    let planes = N::from(need("mb")?) * need("ic")?;
    let (mut s, mut t, mut nsp) = (planes, planes, 0);
    for x in ["d", "h", "w"] {
        if d.has(&format!("i{x}")) {
            s = s * need(&format!("i{x}"))?;
            t = t * need(&format!("o{x}"))?;
            nsp += 1;
        }
    }
    Ok((s, t, nsp))
}

/// Nearest copies (no arithmetic); linear blends `2^spatial_dims` taps per output with a
/// multiply-add each. Forward reads src/writes dst, backward reads diff_dst/writes diff_src.
pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let (src_n, dst_n, nsp) = sizes(&p.problem)?;
    let linear = p.algorithm().unwrap_or("").contains("linear");
    let src = bits_or_unknown(p, &["src", "diff_src"])?;
    let dst = bits(p, &["dst", "diff_dst"]).unwrap_or(src);
    Ok(KindCost {
        flops: if linear {
            N::pow2(nsp) * 2u64 * dst_n
        } else {
            N::ZERO
        },
        bias_flops: N::ZERO,
        bits: traffic(src_n, src) + traffic(dst_n, dst),
        dst_dims: None,
        dst_bits: dst,
    })
}
