//! Normalizations and softmax, with the oneDNN model's per-element counts (`docs/cost-model.md`),
//! `N` the input's elements:
//! - `layer_norm`, `native_layer_norm`: `3N` statistics + `2N` normalise + `N` for each of
//!   weight and bias when given; backward `7N` + `N` with a weight;
//! - `softmax`, `log_softmax` (and `_softmax`, `_log_softmax`): `5N`; backward `4N`.
//!
//! Bytes: every tensor argument read once, the output (`N` elements at the input's type; the
//! gradient of input, weight and bias backward) written once.

use super::tensor::written as cost;
use super::tensor::{bytes, dims, first_element_bytes, is_tensor, output_mask};
use super::{Model, OpCall};
use crate::count::{product, N};
use crate::{Cost, Unknown};

pub(super) fn model(bare: &str) -> Option<Model> {
    Some(match bare {
        "layer_norm" | "native_layer_norm" => layer_norm,
        "native_layer_norm_backward" => layer_norm_backward,
        "softmax" | "_softmax" | "log_softmax" | "_log_softmax" => softmax,
        "_softmax_backward_data" | "_log_softmax_backward_data" => softmax_backward,
        _ => return None,
    })
}

/// `(input, normalized_shape, weight, bias, eps, …)`.
fn layer_norm(op: &OpCall) -> Result<Cost, Unknown> {
    let n = product(&dims(op, 0)?);
    let affine = is_tensor(op, 2) as u64 + is_tensor(op, 3) as u64;
    cost(op, n * (5 + affine), n * first_element_bytes(op))
}

/// `(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)`: the input's
/// gradient `7N`, the weight's `N` more; `output_mask` (`[True, False, False]` for a frozen
/// layer) says which gradients are computed and written — all of them without it.
fn layer_norm_backward(op: &OpCall) -> Result<Cost, Unknown> {
    let n = product(&dims(op, 1)?);
    let mask = output_mask(op, 7, 3);
    let wants = |i: usize| mask[i];
    let mut flops = N::ZERO;
    let mut written = N::ZERO;
    if wants(0) {
        flops += n * 7u64;
        written += n * first_element_bytes(op);
    }
    if wants(1) && is_tensor(op, 5) {
        flops += n;
        written += bytes(op, 5)?;
    }
    if wants(2) {
        written += bytes(op, 6)?;
    }
    cost(op, flops, written)
}

/// `(self, dim, …)`.
fn softmax(op: &OpCall) -> Result<Cost, Unknown> {
    let n = product(&dims(op, 0)?);
    cost(op, n * 5u64, n * first_element_bytes(op))
}

/// `(grad_output, output, dim, input_dtype)`.
fn softmax_backward(op: &OpCall) -> Result<Cost, Unknown> {
    let n = product(&dims(op, 0)?);
    cost(op, n * 4u64, n * first_element_bytes(op))
}

#[cfg(test)]
mod tests {
    use super::super::{cost, strings, OpCall};

    #[test]
    fn normalizations_by_hand() {
        // layer_norm of [4, 64, 128] with weight and bias [128]: 7N, src + dst + weight + bias.
        let n = 4 * 64 * 128;
        let dims = [
            vec![4, 64, 128],
            vec![1],
            vec![128],
            vec![128],
            vec![],
            vec![],
        ];
        let types = strings(&["float", "ScalarList", "float", "float", "Scalar", "Scalar"]);
        let c = cost(&OpCall {
            name: "aten::layer_norm",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 7 * n);
        assert_eq!(c.bytes, 4 * (n + 128 + 128 + n));
        // softmax backward of [8, 64, 64] in bf16: 4N, grad_output + output + grad_input.
        let n = 8 * 64 * 64;
        let dims = [vec![8, 64, 64], vec![8, 64, 64], vec![], vec![]];
        let types = strings(&["c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]);
        let c = cost(&OpCall {
            name: "aten::_softmax_backward_data",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 4 * n);
        assert_eq!(c.bytes, 2 * 3 * n);
    }

    /// `native_layer_norm_backward` of [4, 64, 128] (the GPT fixture's): every gradient, 8N and
    /// the input's, weight's and bias's gradients written; a frozen layer's input gradient
    /// only (`output_mask` `[True, False, False]`), 7N.
    #[test]
    fn layer_norm_backward_follows_its_output_mask() {
        let n = 4 * 64 * 128;
        let dims = [
            vec![4, 64, 128],
            vec![4, 64, 128],
            vec![],
            vec![4, 64, 1],
            vec![4, 64, 1],
            vec![128],
            vec![128],
            vec![],
        ];
        let types = strings(&[
            "float",
            "float",
            "ScalarList",
            "float",
            "float",
            "float",
            "float",
            "ScalarList",
        ]);
        let read = 4 * (2 * n + 2 * 256 + 2 * 128);
        let call = |mask: &str| {
            let concrete = strings(&["", "", "[128]", "", "", "", "", mask]);
            cost(&OpCall {
                name: "aten::native_layer_norm_backward",
                dims: &dims,
                types: &types,
                concrete: &concrete,
                ..Default::default()
            })
            .unwrap()
        };
        let c = call("[True, True, True]");
        assert_eq!((c.flops, c.bytes), (8 * n, read + 4 * (n + 128 + 128)));
        let c = call("[True, False, False]");
        assert_eq!((c.flops, c.bytes), (7 * n, read + 4 * n));
        // A mask the trace left empty (or odd) is no mask: every gradient.
        for odd in ["", "[True]", "[yes, no, maybe]"] {
            assert_eq!(call(odd).flops, 8 * n, "{odd:?}");
        }
    }
}
