//! Scaled dot-product attention, forward and backward: `scaled_dot_product_attention` and the
//! kernels it dispatches to on CPU (`_scaled_dot_product_flash_attention_for_cpu` and its
//! `_backward`, the efficient and math variants). `q [B, H, L, E]`, `k [B, H, S, E]`,
//! `v [B, H, S, Ev]`. Only the matrix multiplies count, as for RNNs:
//! - forward `2·B·H·L·S·(E + Ev)`: the scores `Q·Kᵀ` and the output `P·V`;
//! - backward `2·B·H·L·S·(3E + 2Ev)`: the scores again, `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `dQ = dS·K`,
//!   `dK = dSᵀ·Q`.
//!
//! Under a causal mask (`is_causal` true in the trace's `Concrete Inputs`) only the unmasked
//! score entries count: row `i` of the `L × S` scores keeps `min(i + 1, S)` (PyTorch's
//! top-left `tril`), `Σ min(i + 1, S)` pairs in place of `L·S` — about half for `L = S`, the
//! work the flash kernels do (they skip the masked blocks; at block granularity a little more).
//! The math variant computes every score and masks after: it keeps `L·S`, as does a trace
//! without concrete inputs (an upper bound then).
//! Bytes: every tensor argument read once, and the outputs (`O`, plus `dQ dK dV` backward)
//! written once.

use super::tensor::{all_bytes, bytes, count, dims, precision};
use super::{Model, OpCall};
use crate::count::N;
use crate::{unknown, Cost, Unknown};

pub(super) fn model(bare: &str) -> Option<Model> {
    Some(match bare {
        "scaled_dot_product_attention"
        | "_scaled_dot_product_flash_attention_for_cpu"
        | "_scaled_dot_product_flash_attention"
        | "_scaled_dot_product_efficient_attention"
        | "_scaled_dot_product_attention_math" => forward,
        "_scaled_dot_product_flash_attention_for_cpu_backward"
        | "_scaled_dot_product_flash_attention_backward"
        | "_scaled_dot_product_efficient_attention_backward" => backward,
        _ => return None,
    })
}

/// `(B·H, L, S, E, Ev)` from the query, key and value at arguments `q`, `q + 1`, `q + 2`.
fn sizes(op: &OpCall, q: usize) -> Result<(N, u64, u64, u64, u64), Unknown> {
    let (qd, kd, vd) = (dims(op, q)?, dims(op, q + 1)?, dims(op, q + 2)?);
    let bad = || {
        unknown(format!(
            "{}: query, key and value are not [.., L|S, E] tensors",
            op.name
        ))
    };
    let (&e, rest) = qd.split_last().ok_or_else(bad)?;
    let (&l, lead) = rest.split_last().ok_or_else(bad)?;
    let s = *kd.get(kd.len().wrapping_sub(2)).ok_or_else(bad)?;
    let ev = *vd.last().ok_or_else(bad)?;
    if kd.last() != Some(&e) {
        return Err(bad());
    }
    let bh: N = lead.iter().map(|&d| N::from(d)).product();
    Ok((bh, l, s, e, ev))
}

/// Where each op takes `is_causal` (its schema's argument index).
fn causal_at(name: &str) -> Option<usize> {
    Some(match name.strip_prefix("aten::").unwrap_or(name) {
        "scaled_dot_product_attention" => 5,
        "_scaled_dot_product_flash_attention_for_cpu" | "_scaled_dot_product_flash_attention" => 4,
        "_scaled_dot_product_efficient_attention" => 6,
        "_scaled_dot_product_flash_attention_for_cpu_backward" => 7,
        "_scaled_dot_product_flash_attention_backward"
        | "_scaled_dot_product_efficient_attention_backward" => 11,
        _ => return None,
    })
}

/// The score entries computed: `L·S`, or under a causal mask `Σ_{i<L} min(i + 1, S)`. The
/// composite `scaled_dot_product_attention` (costed in place of the kernel it runs) counts as
/// causal only without dropout: with dropout, CPU runs the math variant, which computes every
/// score.
fn pairs(op: &OpCall, l: u64, s: u64) -> N {
    let composite =
        op.name.strip_prefix("aten::").unwrap_or(op.name) == "scaled_dot_product_attention";
    let no_dropout = || {
        op.concrete
            .get(4)
            .and_then(|p| p.trim().parse::<f64>().ok())
            == Some(0.0)
    };
    let causal = causal_at(op.name)
        .and_then(|i| op.concrete.get(i))
        .is_some_and(|c| c.trim() == "True")
        && (!composite || no_dropout());
    if !causal {
        return N::from(l) * s;
    }
    // Rows 0..min(L, S) keep i + 1 entries; rows past S keep all S.
    let m = l.min(s);
    N::from(m) * (m + 1) / 2 + N::from(l - m) * s
}

fn forward(op: &OpCall) -> Result<Cost, Unknown> {
    let (bh, l, s, e, ev) = sizes(op, 0)?;
    let flops = bh * pairs(op, l, s) * (e + ev) * 2u64;
    // The output is like the query with the value's last dimension.
    let q = bytes(op, 0)?;
    let out = if e == 0 { N::ZERO } else { q * ev / e };
    Ok(Cost {
        flops: count(op, flops, "flops")?,
        extra_flops: 0,
        bytes: count(op, all_bytes(op)? + out, "bytes")?,
        precision: precision(op),
    })
}

/// `(grad_out, query, key, value, out, logsumexp, …)`.
fn backward(op: &OpCall) -> Result<Cost, Unknown> {
    let (bh, l, s, e, ev) = sizes(op, 1)?;
    let flops = bh * pairs(op, l, s) * (e * 3 + ev * 2) * 2u64;
    let grads = bytes(op, 1)? + bytes(op, 2)? + bytes(op, 3)?;
    Ok(Cost {
        flops: count(op, flops, "flops")?,
        extra_flops: 0,
        bytes: count(op, all_bytes(op)? + grads, "bytes")?,
        precision: precision(op),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{cost, OpCall};

    #[test]
    fn attention_by_hand() {
        // q, k, v [2, 4, 64, 32] in f32: B·H = 8, L = S = 64, E = Ev = 32.
        let qkv = vec![2, 4, 64, 32];
        let dims = [
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types: Vec<String> = ["float", "float", "float", "double", "bool", "", "Scalar"]
            .map(String::from)
            .to_vec();
        let name = "aten::_scaled_dot_product_flash_attention_for_cpu";
        let c = cost(&OpCall {
            name,
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        let t = 2 * 4 * 64 * 32; // elements of one of q, k, v
        assert_eq!(c.flops, 2 * 8 * 64 * 64 * (32 + 32));
        assert_eq!(c.bytes, 4 * (3 * t + t));
        // Backward: grad_out, q, k, v, out, logsumexp [2, 4, 64] f32.
        let dims = [
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            vec![2, 4, 64],
        ];
        let types: Vec<String> = ["float"; 6].map(String::from).to_vec();
        let name = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";
        let c = cost(&OpCall {
            name,
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 2 * 8 * 64 * 64 * (3 * 32 + 2 * 32));
        assert_eq!(c.bytes, 4 * (5 * t + 2 * 4 * 64 + 3 * t));
    }

    /// `is_causal=True` (the GPT fixture's `Concrete Inputs`): row i of the 64 × 64 scores keeps
    /// i + 1 entries, 64·65/2 = 2080 of 4096; L = 3 queries over S = 5 keys keep 1 + 2 + 3, and
    /// L = 5 over S = 3 keep 1 + 2 + 3 + 3 + 3. The math variant computes every score.
    #[test]
    fn causal_by_hand() {
        let qkv = vec![2, 4, 64, 32];
        let dims = [
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types: Vec<String> = ["float", "float", "float", "Scalar", "Scalar", "", ""]
            .map(String::from)
            .to_vec();
        let concrete: Vec<String> = ["", "", "", "0.", "True", "", ""]
            .map(String::from)
            .to_vec();
        let flops = |name: &str, dims: &[Vec<i64>], concrete: &[String]| {
            cost(&OpCall {
                name,
                dims,
                types: &types,
                concrete,
                ..Default::default()
            })
            .unwrap()
            .flops
        };
        let flash = "aten::_scaled_dot_product_flash_attention_for_cpu";
        assert_eq!(flops(flash, &dims, &concrete), 2 * 8 * 2080 * (32 + 32));
        // The composite op (q, k, v, attn_mask, dropout_p, is_causal, …): causal without
        // dropout (it runs the flash kernel), every score with dropout (the math variant).
        let sdpa = "aten::scaled_dot_product_attention";
        let sdpa_dims = [
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let at = |p: &str| -> Vec<String> {
            ["", "", "", "", p, "True", "", "False"]
                .map(String::from)
                .to_vec()
        };
        assert_eq!(flops(sdpa, &sdpa_dims, &at("0.")), 2 * 8 * 2080 * (32 + 32));
        assert_eq!(
            flops(sdpa, &sdpa_dims, &at("0.1")),
            2 * 8 * 64 * 64 * (32 + 32)
        );
        let math = "aten::_scaled_dot_product_attention_math";
        let math_concrete: Vec<String> = ["", "", "", "", "0.", "True", ""]
            .map(String::from)
            .to_vec();
        assert_eq!(
            flops(math, &dims, &math_concrete),
            2 * 8 * 64 * 64 * (32 + 32)
        );
        let shapes = |l: i64, s: i64| {
            [
                vec![1, 1, l, 8],
                vec![1, 1, s, 8],
                vec![1, 1, s, 8],
                vec![],
                vec![],
                vec![],
                vec![],
            ]
        };
        assert_eq!(flops(flash, &shapes(3, 5), &concrete), 2 * 6 * 16);
        assert_eq!(flops(flash, &shapes(5, 3), &concrete), 2 * 12 * 16);
        // Backward takes is_causal at argument 7.
        let dims = [
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            qkv.clone(),
            vec![2, 4, 64],
        ];
        let types6: Vec<String> = ["float"; 6].map(String::from).to_vec();
        let concrete: Vec<String> = ["", "", "", "", "", "", "0.", "True", "", ""]
            .map(String::from)
            .to_vec();
        let c = cost(&OpCall {
            name: "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
            dims: &dims,
            types: &types6,
            concrete: &concrete,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 2 * 8 * 2080 * (3 * 32 + 2 * 32));
    }
}
