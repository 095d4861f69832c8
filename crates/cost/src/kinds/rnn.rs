//! RNN, LSTM, GRU and LBR-GRU cells.

use crate::count::N;
use crate::descriptor::Descriptor;
use crate::tensors::traffic;
use crate::{unknown, KindCost, Unknown};
use profilednn_model::{Primitive, PropKind};
use serde::Serialize;

/// `lLtTmbNsicSICslcSLCdhcDHCdicDIC` (1.1+) or `…dicDICdlcDLC` (0.x/1.0), with the cell kind
/// and direction from the auxiliary field (LSTM, GRU and LBR-GRU share descriptors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RnnProblem {
    pub layers: u64,
    pub iters: u64,
    pub mb: u64,
    pub sic: u64,
    pub slc: u64,
    pub dhc: u64,
    pub dic: u64,
    pub gates: u64,
    pub directions: u64,
    /// Bidirectional-concat doubles the width of `dst_layer`.
    pub concat: bool,
    /// LBR-GRU carries an extra bias gate.
    pub lbr: bool,
    pub projection: bool,
}

impl RnnProblem {
    pub fn parse(p: &Primitive) -> Result<RnnProblem, Unknown> {
        let problem = &p.problem;
        let d = Descriptor::parse(problem)
            .ok_or_else(|| unknown(format!("rnn descriptor '{problem}' not recognised")))?;
        let need = |k: &str| d.get(k).ok_or_else(|| super::missing(problem, k));
        let (dhc, dic) = if d.has("dhc") {
            (need("dhc")?, need("dic")?)
        } else {
            // 0.x/1.0: `dic` was the hidden size and `dlc` the layer output.
            (need("dic")?, d.get("dlc").map_or_else(|| need("dic"), Ok)?)
        };
        // 0.x/1.0 fused cell and direction: `alg:vanilla_lstm_unidirectional_left2right`.
        let alg_field = p.aux_value("alg").unwrap_or("");
        const CELLS: [(&str, u64); 6] = [
            ("vanilla_rnn", 1),
            ("vanilla_lstm", 4),
            ("vanilla_gru", 3),
            ("lbr_gru", 3),
            ("vanilla_augru", 3),
            ("lbr_augru", 3),
        ];
        let (alg, gates) = CELLS
            .iter()
            .find(|(name, _)| alg_field.starts_with(name))
            .map(|(n, g)| (*n, *g))
            .ok_or_else(|| unknown(format!("rnn cell kind '{alg_field}' not known")))?;
        let fused_dir = alg_field[alg.len()..].trim_start_matches('_');
        let dir = p
            .aux_value("direction")
            .or((!fused_dir.is_empty()).then_some(fused_dir))
            .unwrap_or("unidirectional");
        Ok(RnnProblem {
            layers: need("l")?,
            iters: need("t")?,
            mb: need("mb")?,
            sic: need("sic")?,
            slc: need("slc")?,
            dhc,
            dic,
            gates,
            directions: if dir.starts_with("bidirectional") {
                2
            } else {
                1
            },
            concat: dir == "bidirectional_concat",
            lbr: alg.starts_with("lbr"),
            projection: crate::tensors::present(p, &["wei_proj"]),
        })
    }

    /// benchdnn: matrix multiplies only, `2 * gates * dhc * mb * (sic + slc)` per cell plus
    /// `2 * dhc * dic * mb` for the LSTM projection, times cells; backward counts twice.
    pub fn flops(&self, backward: bool) -> Result<u64, Unknown> {
        self.flops_n(backward).to_u64("the operation count")
    }

    fn flops_n(&self, backward: bool) -> N {
        let cells = N::from(self.directions) * self.layers * self.iters;
        let mut cell =
            N::from(2u64) * self.gates * self.dhc * self.mb * (N::from(self.sic) + self.slc);
        if self.projection {
            cell += N::from(2u64) * self.dhc * self.dic * self.mb;
        }
        N::from(if backward { 2u64 } else { 1 }) * cells * cell
    }

    /// Elements of a named RNN tensor (`diff_` prefixes have the shape of their tensor).
    pub fn elements(&self, arg: &str) -> Option<Result<u64, Unknown>> {
        Some(self.elements_n(arg)?.to_u64("the tensor size"))
    }

    fn elements_n(&self, arg: &str) -> Option<N> {
        let ld = N::from(self.layers) * self.directions;
        let arg = arg.strip_prefix("diff_").unwrap_or(arg);
        let n = |x: u64| N::from(x);
        Some(match arg {
            "src_layer" => n(self.iters) * self.mb * self.slc,
            "src_iter" => ld * self.mb * self.sic,
            "src_iter_c" | "dst_iter_c" => ld * self.mb * self.dhc,
            "wei_layer" => ld * self.slc * self.gates * self.dhc,
            "wei_iter" => ld * self.sic * self.gates * self.dhc,
            "wei_peephole" => ld * 3u64 * self.dhc,
            "wei_proj" => ld * self.dhc * self.dic,
            "bias" => ld * (self.gates + self.lbr as u64) * self.dhc,
            "dst_layer" => n(self.iters) * self.mb * self.dic * if self.concat { 2u64 } else { 1 },
            "dst_iter" => ld * self.mb * self.dic,
            _ => return None,
        })
    }
}

pub fn cost(p: &Primitive) -> Result<KindCost, Unknown> {
    let prb = RnnProblem::parse(p)?;
    let backward = p.prop_kind == PropKind::Backward;
    // Each listed tensor is read or written once, at its own type.
    let listed: Vec<N> = p
        .mds
        .iter()
        .filter(|md| !md.is_absent())
        .filter_map(|md| Some(traffic(prb.elements_n(&md.arg)?, md.data_type.bits()?)))
        .collect();
    let mut bits: N = listed.iter().copied().sum();
    if listed.is_empty() {
        // 0.x descriptors (`fdata:tnc-…`) name no tensors: assume the standard set at the
        // first listed type (f32 when none).
        let b = crate::tensors::first_bits(p).unwrap_or(crate::tensors::F32_BITS);
        let names = [
            "src_layer",
            "src_iter",
            "wei_layer",
            "wei_iter",
            "bias",
            "dst_layer",
            "dst_iter",
        ];
        let per_pass: N = names.iter().filter_map(|n| prb.elements_n(n)).sum();
        bits = traffic(per_pass * if backward { 2u64 } else { 1 }, b);
    }
    Ok(KindCost {
        flops: prb.flops_n(backward),
        bias_flops: N::ZERO,
        bits,
        dst_dims: None,
        dst_bits: 0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn old_fused_cell_and_direction() {
        // MKL-DNN 1.0: 7 fields, cell and direction fused in `alg`.
        let p = profilednn_verbose::parse_primitive(
            "cpu,rnn,ref:any,forward_training,src_layer_f32::blocked:abc:f0,alg:vanilla_lstm_bidirectional_concat,l1t8mb17sic1024slc1024dic1024dlc1024",
            Default::default(),
            true,
        )
        .unwrap();
        let r = super::RnnProblem::parse(&p).unwrap();
        assert_eq!((r.gates, r.directions, r.concat), (4, 2, true));
        assert_eq!(r.flops(false).unwrap(), 2 * 8 * 2 * 4 * 1024 * 17 * 2048);
    }
}
