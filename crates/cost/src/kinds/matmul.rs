//! Matmul (batched, broadcast) and the legacy gemm primitive of DNNL 1.x.

use super::{broadcast, dims_list};
use crate::count::N;
use crate::descriptor::{product, Descriptor};
use crate::tensors::{bits_or_unknown, traffic, F32_BITS};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::{DataType, Primitive};
use serde::Serialize;

/// `SRC:WEI[:DST]` with batch dimensions broadcast (numpy rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MatmulProblem {
    pub src: Vec<u64>,
    pub wei: Vec<u64>,
    pub dst: Vec<u64>,
}

impl MatmulProblem {
    pub fn parse(problem: &str) -> Result<MatmulProblem, Unknown> {
        let (t, extra) = dims_list(problem)?;
        if t.len() < 2 || t[0].len() < 2 || t[1].len() < 2 || t[0].len() != t[1].len() {
            return Err(unknown(format!(
                "matmul descriptor '{problem}': expected SRC:WEI of equal rank >= 2"
            )));
        }
        let (src, wei) = (t[0].clone(), t[1].clone());
        let r = src.len();
        if src[r - 1] != wei[r - 2] {
            return Err(unknown(format!(
                "matmul descriptor '{problem}': K of SRC ({}) differs from K of WEI ({})",
                src[r - 1],
                wei[r - 2]
            )));
        }
        let dst = match t.get(2).or(extra.as_ref()) {
            Some(d) if d.len() != r => {
                return Err(unknown(format!(
                    "matmul descriptor '{problem}': DST rank differs from SRC rank"
                )))
            }
            Some(d) => d.clone(),
            None => {
                let mut d = broadcast(&src[..r - 2], &wei[..r - 2]);
                d.push(src[r - 2]);
                d.push(wei[r - 1]);
                d
            }
        };
        Ok(MatmulProblem { src, wei, dst })
    }

    pub fn m(&self) -> u64 {
        self.src[self.src.len() - 2]
    }
    pub fn k(&self) -> u64 {
        self.src[self.src.len() - 1]
    }
    pub fn n(&self) -> u64 {
        self.wei[self.wei.len() - 1]
    }
    pub fn batch(&self) -> Result<u64, Unknown> {
        self.batch_n().to_u64("the batch size")
    }

    fn batch_n(&self) -> N {
        product(&self.dst[..self.dst.len() - 2])
    }

    /// benchdnn: `2 * batch * M * N * K`.
    pub fn flops(&self) -> Result<u64, Unknown> {
        self.flops_n().to_u64("the operation count")
    }

    fn flops_n(&self) -> N {
        N::from(2u64) * self.batch_n() * self.m() * self.n() * self.k()
    }
}

pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let prb = MatmulProblem::parse(&p.problem)?;
    let dst_bits = bits_or_unknown(p, &["dst"])?;
    let dst_elems = product(&prb.dst);
    let mut bits = traffic(product(&prb.src), bits_or_unknown(p, &["src"])?)
        + traffic(product(&prb.wei), bits_or_unknown(p, &["wei"])?)
        + traffic(dst_elems, dst_bits);
    let mut bias_flops = N::ZERO;
    if let Some(bia) = p.tensor(&["bia"]) {
        // The bias mask (`f0_mask2`) names the destination dims the bias spans; without one
        // (older versions) the common per-N bias is assumed.
        let mask = bia
            .flags
            .split("mask")
            .nth(1)
            .and_then(|m| m.parse::<u64>().ok())
            .unwrap_or(1u64.checked_shl(prb.dst.len() as u32 - 1).unwrap_or(0));
        let elems: N = prb
            .dst
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < 64 && mask & (1 << i) != 0)
            .map(|(_, d)| N::from(*d))
            .product();
        bits += traffic(elems, bia.data_type.bits().unwrap_or(F32_BITS));
        bias_flops = dst_elems;
    }
    Ok(KindCost {
        flops: prb.flops_n(),
        bias_flops,
        bits,
        dst_dims: Some(prb.dst),
        dst_bits,
    })
}

/// DNNL 1.x `gemm`: `mMnNkK_ldaAldbBldcC trans:XY a_dt:… b_dt:… c_dt:… acc_dt:…`.
pub fn gemm_cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let mut tokens = p.problem.split_ascii_whitespace();
    let shape = tokens.next().unwrap_or("");
    let d = Descriptor::parse(shape)
        .ok_or_else(|| unknown(format!("gemm descriptor '{}' not recognised", p.problem)))?;
    let need = |k: &str| d.get(k).ok_or_else(|| super::missing(&p.problem, k));
    let (m, n, k) = (need("m")?, need("n")?, need("k")?);
    let dt = |name: &str| {
        p.problem
            .split_ascii_whitespace()
            .find_map(|t| t.strip_prefix(name))
            .and_then(DataType::parse)
            .and_then(|dt| dt.bits())
            .unwrap_or(F32_BITS)
    };
    let c_bits = dt("c_dt:");
    let (m, n, k) = (N::from(m), N::from(n), N::from(k));
    Ok(KindCost {
        flops: N::from(2u64) * m * n * k,
        bias_flops: N::ZERO,
        bits: traffic(m * k, dt("a_dt:")) + traffic(k * n, dt("b_dt:")) + traffic(m * n, c_bits),
        dst_dims: Some(vec![need("m")?, need("n")?]),
        dst_bits: c_bits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_batch() {
        let p = MatmulProblem::parse("12x128x64:1x64x128").unwrap();
        assert_eq!(p.dst, vec![12, 128, 128]);
        assert_eq!(p.flops().unwrap(), 2 * 12 * 128 * 128 * 64);
        // v1.x–v3.1 printed the destination too.
        let q = MatmulProblem::parse("3x4x5:1x5x6:3x4x6").unwrap();
        assert_eq!(q.flops().unwrap(), 2 * 3 * 4 * 6 * 5);
        assert!(
            MatmulProblem::parse("3x4x5:1x5x6:6").is_err(),
            "DST of another rank"
        );
        assert!(MatmulProblem::parse("*x64:64x32").is_err());
        assert!(MatmulProblem::parse("4x5:6x7").is_err());
    }
}
