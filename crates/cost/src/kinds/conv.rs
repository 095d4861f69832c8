//! Convolution and deconvolution.

use crate::count::{product, N};
use crate::descriptor::Descriptor;
use crate::tensors::{bits_or_unknown, present, traffic};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::{Primitive, PropKind};
use serde::Serialize;

/// One spatial dimension of a convolution: input, output, kernel, stride, dilation (oneDNN
/// style: 0 = dense) and the left/top/front padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SpatialDim {
    pub i: u64,
    pub o: u64,
    pub k: u64,
    pub s: u64,
    pub d: u64,
    pub p: u64,
}

impl SpatialDim {
    /// Kernel taps that land inside the input, summed over output positions: benchdnn's
    /// `sp_ops` loop restricted to one dimension (the loop nest is separable). For a
    /// deconvolution benchdnn swaps the roles of input and output sizes.
    ///
    /// Counted in closed form (the log's sizes can be anything: a loop over them could run for
    /// days), too large rather than wrapped.
    pub(crate) fn valid_taps(&self, deconv: bool) -> N {
        let (outer, bound) = if deconv {
            (self.i, self.o)
        } else {
            (self.o, self.i)
        };
        // Pairs (o, k) in [0, outer) x [0, k) with p <= o*s + k*(d+1) < p + bound.
        let n = (|| {
            let (o, k, s, dd, p, b) = (
                outer as u128,
                self.k as u128,
                self.s as u128,
                self.d as u128 + 1,
                self.p as u128,
                bound as u128,
            );
            if b == 0 || o == 0 || k == 0 {
                return Some(0);
            }
            let upper = pairs_at_most(o, k, s, dd, Some(p.checked_add(b - 1)?))?;
            let lower = pairs_at_most(o, k, s, dd, p.checked_sub(1))?;
            upper.checked_sub(lower)
        })();
        n.map_or(N::TOO_LARGE, N::from)
    }
}

/// `#{(o, k) : o < outer, k < kernel, o*s + k*dd <= x}` (zero when `x` is `None`, i.e. -1).
fn pairs_at_most(outer: u128, kernel: u128, s: u128, dd: u128, x: Option<u128>) -> Option<u128> {
    let Some(x) = x else { return Some(0) };
    // k with k*dd <= x at all.
    let k_end = kernel.min(x / dd + 1);
    if s == 0 {
        return outer.checked_mul(k_end);
    }
    // k for which every o fits: x - k*dd >= (outer-1)*s.
    let full_from = (outer - 1).checked_mul(s)?;
    let k_full = if x >= full_from {
        k_end.min((x - full_from) / dd + 1)
    } else {
        0
    };
    // The rest: sum over k in [k_full, k_end) of floor((x - k*dd)/s) + 1, reversed so the
    // numerator grows: j = k_end-1-k, numerator (x - (k_end-1)*dd) + j*dd.
    let n = k_end - k_full;
    let partial = if n == 0 {
        0
    } else {
        let b = x - (k_end - 1).checked_mul(dd)?;
        floor_sum(n, s, dd, b)?.checked_add(n)?
    };
    k_full.checked_mul(outer)?.checked_add(partial)
}

/// `sum_{i=0}^{n-1} floor((a*i + b) / m)` in O(log) steps (m >= 1), `None` past 128 bits.
fn floor_sum(mut n: u128, mut m: u128, mut a: u128, mut b: u128) -> Option<u128> {
    let mut ans: u128 = 0;
    if n == 0 {
        return Some(0);
    }
    loop {
        if a >= m {
            let tri = if n & 1 == 0 {
                (n / 2).checked_mul(n - 1)?
            } else {
                n.checked_mul((n - 1) / 2)?
            };
            ans = ans.checked_add(tri.checked_mul(a / m)?)?;
            a %= m;
        }
        if b >= m {
            ans = ans.checked_add(n.checked_mul(b / m)?)?;
            b %= m;
        }
        let y_max = a.checked_mul(n)?.checked_add(b)?;
        if y_max < m {
            break;
        }
        n = y_max / m;
        b = y_max % m;
        std::mem::swap(&mut m, &mut a);
    }
    Some(ans)
}

/// A convolution problem as its descriptor states it (`g2mb1_ic96oc256_ih27oh27kh5sh1dh0ph2_…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConvProblem {
    pub g: u64,
    pub mb: u64,
    /// Total input channels (all groups).
    pub ic: u64,
    pub oc: u64,
    /// Depth, height, width — only those the descriptor prints (1-D has only width).
    pub spatial: Vec<SpatialDim>,
    pub deconv: bool,
}

impl ConvProblem {
    pub fn parse(problem: &str, deconv: bool) -> Result<ConvProblem, Unknown> {
        let d = Descriptor::parse(problem)
            .ok_or_else(|| unknown(format!("convolution descriptor '{problem}' not recognised")))?;
        let need = |k: &str| d.get(k).ok_or_else(|| super::missing(problem, k));
        let mut spatial = Vec::new();
        for x in ["d", "h", "w"] {
            let key = |p: &str| format!("{p}{x}");
            if !d.has(&key("i")) {
                continue;
            }
            spatial.push(SpatialDim {
                i: need(&key("i"))?,
                o: need(&key("o"))?,
                k: d.get_or(&key("k"), 1),
                s: d.get_or(&key("s"), 1),
                d: d.get_or(&key("d"), 0),
                p: d.get_or(&key("p"), 0),
            });
        }
        if spatial.is_empty() {
            return Err(super::missing(problem, "iw"));
        }
        let g = d.get_or("g", 1).max(1);
        let ic = need("ic")?;
        if ic % g != 0 {
            return Err(unknown(format!("ic {ic} is not a multiple of g {g}")));
        }
        Ok(ConvProblem {
            g,
            mb: need("mb")?,
            ic,
            oc: need("oc")?,
            spatial,
            deconv,
        })
    }

    /// benchdnn's `2 * mb * oc * ic / g * sp_ops`; the same for every direction.
    pub fn flops(&self) -> Result<u64, Unknown> {
        self.flops_n().to_u64("the operation count")
    }

    pub(crate) fn flops_n(&self) -> N {
        let taps: N = self
            .spatial
            .iter()
            .map(|s| s.valid_taps(self.deconv))
            .product();
        // `ic` is a multiple of `g`: dividing first is exact.
        N::from(2u64) * self.mb * self.oc * (self.ic / self.g) * taps
    }

    pub fn src_dims(&self) -> Vec<u64> {
        let mut d = vec![self.mb, self.ic];
        d.extend(self.spatial.iter().map(|s| s.i));
        d
    }

    pub fn dst_dims(&self) -> Vec<u64> {
        let mut d = vec![self.mb, self.oc];
        d.extend(self.spatial.iter().map(|s| s.o));
        d
    }

    pub(crate) fn weights_elements(&self) -> N {
        N::from(self.oc)
            * (self.ic / self.g)
            * self.spatial.iter().map(|s| N::from(s.k)).product::<N>()
    }
}

pub fn cost(p: &Primitive, deconv: bool) -> Result<KindCost, Unknown> {
    let prb = ConvProblem::parse(&p.problem, deconv)?;
    let src = traffic(
        product(&prb.src_dims()),
        bits_or_unknown(p, &["src", "diff_src"])?,
    );
    let dst_dims = prb.dst_dims();
    let dst_elems = product(&dst_dims);
    let dst_bits = bits_or_unknown(p, &["dst", "diff_dst"])?;
    let dst = traffic(dst_elems, dst_bits);
    let wei = traffic(
        prb.weights_elements(),
        bits_or_unknown(p, &["wei", "diff_wei"])?,
    );
    let with_bias = present(p, &["bia", "diff_bia"]) && p.prop_kind != PropKind::BackwardData;
    let bia = if with_bias {
        traffic(prb.oc, bits_or_unknown(p, &["bia", "diff_bia"])?)
    } else {
        N::ZERO
    };
    // Every direction touches each of its tensors once: forward reads src+wei(+bia) and writes
    // dst; backward-data reads diff_dst+wei and writes diff_src; backward-weights reads
    // src+diff_dst and writes diff_wei(+diff_bia).
    Ok(KindCost {
        flops: prb.flops_n(),
        bias_flops: if with_bias { dst_elems } else { N::ZERO },
        bits: src + dst + wei + bia,
        dst_dims: Some(dst_dims),
        dst_bits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over the full loop nest, as benchdnn writes it.
    fn brute(p: &ConvProblem) -> u64 {
        let dims: Vec<SpatialDim> = p.spatial.clone();
        let mut count = 0u64;
        fn rec(dims: &[SpatialDim], deconv: bool, acc: &mut u64) {
            // Product of independent per-dimension counts equals the nested loop count; here we
            // nest explicitly to check that claim.
            fn go(dims: &[SpatialDim], i: usize, deconv: bool, acc: &mut u64) {
                if i == dims.len() {
                    *acc += 1;
                    return;
                }
                let d = dims[i];
                let (outer, bound) = if deconv { (d.i, d.o) } else { (d.o, d.i) };
                for o in 0..outer as i64 {
                    for k in 0..d.k as i64 {
                        let x = o * d.s as i64 - d.p as i64 + k * (d.d as i64 + 1);
                        if x >= 0 && x < bound as i64 {
                            go(dims, i + 1, deconv, acc);
                        }
                    }
                }
            }
            go(dims, 0, deconv, acc)
        }
        rec(&dims, p.deconv, &mut count);
        2 * p.mb * p.oc * p.ic / p.g * count
    }

    /// The loop benchdnn writes, for one dimension.
    fn taps_by_loop(d: &SpatialDim, deconv: bool) -> u128 {
        let (outer, bound) = if deconv { (d.i, d.o) } else { (d.o, d.i) };
        let mut n = 0;
        for o in 0..outer as i128 {
            for k in 0..d.k as i128 {
                let x = o * d.s as i128 - d.p as i128 + k * (d.d as i128 + 1);
                if x >= 0 && x < bound as i128 {
                    n += 1;
                }
            }
        }
        n
    }

    proptest::proptest! {
        #[test]
        fn closed_form_taps_match_the_loop(
            i in 0u64..40, o in 0u64..40, k in 0u64..12, s in 0u64..6, d in 0u64..4,
            p in 0u64..30, deconv: bool,
        ) {
            let dim = SpatialDim { i, o, k, s, d, p };
            proptest::prop_assert_eq!(dim.valid_taps(deconv).get(), Some(taps_by_loop(&dim, deconv)));
        }
    }

    #[test]
    fn huge_dimensions_are_counted_without_looping() {
        // Stride 1, no padding, kernel 1: every output sees one tap.
        let big = 1u64 << 40;
        let d = SpatialDim {
            i: big,
            o: big,
            k: 1,
            s: 1,
            d: 0,
            p: 0,
        };
        assert_eq!(d.valid_taps(false).get(), Some(big as u128));
        // A kernel as wide as the input, full padding: k*i - (k-1)k taps... checked on a
        // smaller size against the loop, then counted instantly at 2^40.
        let small = SpatialDim {
            i: 300,
            o: 599,
            k: 300,
            s: 1,
            d: 0,
            p: 299,
        };
        assert_eq!(
            small.valid_taps(false).get(),
            Some(taps_by_loop(&small, false))
        );
        let huge = SpatialDim {
            i: big,
            o: 2 * big - 1,
            k: big,
            s: 1,
            d: 0,
            p: big - 1,
        };
        assert_eq!(
            huge.valid_taps(false).get(),
            Some(big as u128 * big as u128)
        );
        let max = SpatialDim {
            i: u64::MAX,
            o: u64::MAX,
            k: u64::MAX,
            s: u64::MAX,
            d: u64::MAX,
            p: u64::MAX,
        };
        let _ = max.valid_taps(false);
        let _ = max.valid_taps(true);
    }

    #[test]
    fn padding_taps_are_not_counted() {
        // 3x3 kernel, pad 1, 4x4 input: per dimension, the 4 output rows see 2+3+3+2 = 10 taps.
        let p =
            ConvProblem::parse("mb1_ic1oc1_ih4oh4kh3sh1dh0ph1_iw4ow4kw3sw1dw0pw1", false).unwrap();
        assert_eq!(p.flops().unwrap(), 2 * 10 * 10);
        assert_eq!(p.flops().unwrap(), brute(&p));
    }

    #[test]
    fn grouped_strided_dilated_3d_and_deconv_match_the_loop_nest() {
        for (s, deconv) in [
            (
                "g2mb1_ic96oc256_ih27oh27kh5sh1dh0ph2_iw27ow27kw5sw1dw0pw2",
                false,
            ),
            (
                "mb2_g4ic8oc8_id5od3kd3sd2dd0pd1_ih7oh4kh3sh2dh1ph2_iw9ow5kw3sw2dw0pw1",
                false,
            ),
            ("mb2_ic16oc8_iw32ow16kw3sw2dw1pw1", false),
            ("mb2_ic16oc8_ih8oh16kh4sh2dh0ph1_iw8ow16kw4sw2dw0pw1", true),
        ] {
            let p = ConvProblem::parse(s, deconv).unwrap();
            assert_eq!(p.flops().unwrap(), brute(&p), "{s}");
        }
    }

    #[test]
    fn hand_derived_dense_count() {
        // No padding, stride 1: every tap is valid. 2*mb*oc*ic*oh*ow*kh*kw.
        let p = ConvProblem::parse(
            "mb2_ic64oc256_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0",
            false,
        )
        .unwrap();
        assert_eq!(p.flops().unwrap(), 2 * 2 * 256 * 64 * 56 * 56);
        assert_eq!(p.weights_elements().get(), Some(256 * 64));
    }
}
