//! Convolution and deconvolution.

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
    pub fn valid_taps(&self, deconv: bool) -> u64 {
        let (outer, bound) = if deconv {
            (self.i, self.o)
        } else {
            (self.o, self.i)
        };
        let mut n = 0u64;
        for o in 0..outer as i64 {
            for k in 0..self.k as i64 {
                let i = o * self.s as i64 - self.p as i64 + k * (self.d as i64 + 1);
                if i >= 0 && i < bound as i64 {
                    n += 1;
                }
            }
        }
        n
    }
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
    pub fn flops(&self) -> u64 {
        let taps: u64 = self
            .spatial
            .iter()
            .map(|s| s.valid_taps(self.deconv))
            .product();
        2 * self.mb * self.oc * self.ic / self.g * taps
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

    pub fn weights_elements(&self) -> u64 {
        self.oc * (self.ic / self.g) * self.spatial.iter().map(|s| s.k).product::<u64>()
    }
}

pub fn cost(p: &Primitive, deconv: bool) -> Result<KindCost, Unknown> {
    let prb = ConvProblem::parse(&p.problem, deconv)?;
    let src = traffic(
        prb.src_dims().iter().product(),
        bits_or_unknown(p, &["src", "diff_src"])?,
    );
    let dst_dims = prb.dst_dims();
    let dst_elems: u64 = dst_dims.iter().product();
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
        0
    };
    // Every direction touches each of its tensors once: forward reads src+wei(+bia) and writes
    // dst; backward-data reads diff_dst+wei and writes diff_src; backward-weights reads
    // src+diff_dst and writes diff_wei(+diff_bia).
    Ok(KindCost {
        flops: prb.flops(),
        bias_flops: if with_bias { dst_elems } else { 0 },
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

    #[test]
    fn padding_taps_are_not_counted() {
        // 3x3 kernel, pad 1, 4x4 input: per dimension, the 4 output rows see 2+3+3+2 = 10 taps.
        let p =
            ConvProblem::parse("mb1_ic1oc1_ih4oh4kh3sh1dh0ph1_iw4ow4kw3sw1dw0pw1", false).unwrap();
        assert_eq!(p.flops(), 2 * 10 * 10);
        assert_eq!(p.flops(), brute(&p));
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
            assert_eq!(p.flops(), brute(&p), "{s}");
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
        assert_eq!(p.flops(), 2 * 2 * 256 * 64 * 56 * 56);
        assert_eq!(p.weights_elements(), 256 * 64);
    }
}
