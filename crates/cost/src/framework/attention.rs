//! Scaled dot-product attention, forward and backward: `scaled_dot_product_attention` and the
//! kernels it dispatches to on CPU (`_scaled_dot_product_flash_attention_for_cpu` and its
//! `_backward`, the efficient and math variants). `q [B, H, L, E]`, `k [B, H, S, E]`,
//! `v [B, H, S, Ev]`. Only the matrix multiplies count, as for RNNs:
//! - forward `2·B·H·L·S·(E + Ev)`: the scores `Q·Kᵀ` and the output `P·V`;
//! - backward `2·B·H·L·S·(3E + 2Ev)`: the scores again, `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `dQ = dS·K`,
//!   `dK = dSᵀ·Q`.
//!
//! The whole `L × S` score matrix is counted even under a causal mask (the shapes do not say
//! whether one was applied; flash kernels skip the masked blocks): an upper bound on the work.
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

fn forward(op: &OpCall) -> Result<Cost, Unknown> {
    let (bh, l, s, e, ev) = sizes(op, 0)?;
    let flops = bh * l * s * (e + ev) * 2u64;
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
    let flops = bh * l * s * (e * 3 + ev * 2) * 2u64;
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
}
