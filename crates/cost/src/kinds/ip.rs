//! Inner product (fully connected).

use crate::count::N;
use crate::descriptor::Descriptor;
use crate::tensors::{bits_or_unknown, present, traffic};
use crate::{unknown, KindCost, Unknown};
use profilednn_model::{Primitive, PropKind};
use serde::Serialize;

/// `mbNicC[idD][ihH][iwW]ocOC`: source spatial dims are folded into the reduction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpProblem {
    pub mb: u64,
    pub ic: u64,
    pub oc: u64,
    /// The source's spatial dimensions (depth, height, width; 1 when absent).
    pub spatial: [u64; 3],
}

impl IpProblem {
    pub fn parse(problem: &str) -> Result<IpProblem, Unknown> {
        let d = Descriptor::parse(problem).ok_or_else(|| {
            unknown(format!(
                "inner-product descriptor '{problem}' not recognised"
            ))
        })?;
        let need = |k: &str| d.get(k).ok_or_else(|| super::missing(problem, k));
        Ok(IpProblem {
            mb: need("mb")?,
            ic: need("ic")?,
            oc: need("oc")?,
            spatial: ["id", "ih", "iw"].map(|k| d.get_or(k, 1)),
        })
    }

    /// benchdnn: `2 * mb * oc * ic * id * ih * iw`, every direction.
    pub fn flops(&self) -> Result<u64, Unknown> {
        self.flops_n().to_u64("the operation count")
    }

    fn flops_n(&self) -> N {
        N::from(2u64) * self.mb * self.oc * self.ic * self.spatial_n()
    }

    /// Product of the source's spatial dimensions.
    fn spatial_n(&self) -> N {
        crate::count::product(&self.spatial)
    }
}

pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let prb = IpProblem::parse(&p.problem)?;
    let dst_bits = bits_or_unknown(p, &["dst", "diff_dst"])?;
    let with_bias = present(p, &["bia", "diff_bia"]) && p.prop_kind != PropKind::BackwardData;
    let bits = traffic(
        N::from(prb.mb) * prb.ic * prb.spatial_n(),
        bits_or_unknown(p, &["src", "diff_src"])?,
    ) + traffic(
        N::from(prb.oc) * prb.ic * prb.spatial_n(),
        bits_or_unknown(p, &["wei", "diff_wei"])?,
    ) + traffic(N::from(prb.mb) * prb.oc, dst_bits)
        + if with_bias {
            traffic(prb.oc, bits_or_unknown(p, &["bia", "diff_bia"])?)
        } else {
            N::ZERO
        };
    Ok(KindCost {
        flops: prb.flops_n(),
        bias_flops: if with_bias {
            N::from(prb.mb) * prb.oc
        } else {
            N::ZERO
        },
        bits,
        dst_dims: Some(vec![prb.mb, prb.oc]),
        dst_bits,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spatial_source_is_part_of_the_reduction() {
        let p = IpProblem::parse("mb8ic32ih16iw16oc10").unwrap();
        assert_eq!(p.flops().unwrap(), 2 * 8 * 10 * 32 * 16 * 16);
        assert_eq!(
            IpProblem::parse("mb2ic2048oc1000")
                .unwrap()
                .flops()
                .unwrap(),
            2 * 2 * 2048 * 1000
        );
        assert!(IpProblem::parse("mb2ic2048").is_err());
    }
}
