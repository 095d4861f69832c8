//! Normalizations and softmax, with the oneDNN model's per-element counts (`docs/cost-model.md`),
//! `N` the input's elements:
//! - `layer_norm`, `native_layer_norm`: `3N` statistics + `2N` normalise + `N` for each of
//!   weight and bias when given; backward `7N` + `N` with a weight;
//! - `softmax`, `log_softmax` (and `_softmax`, `_log_softmax`): `5N`; backward `4N`.
//!
//! Bytes: every tensor argument read once, the output (`N` elements at the input's type; the
//! gradient of input, weight and bias backward) written once.

use super::tensor::written as cost;
use super::tensor::{bytes, dims, first_element_bytes, is_tensor};
use super::{Model, OpCall};
use crate::count::product;
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

/// `(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)`.
fn layer_norm_backward(op: &OpCall) -> Result<Cost, Unknown> {
    let n = product(&dims(op, 1)?);
    let weighted = is_tensor(op, 5) as u64;
    let written = n * first_element_bytes(op) + bytes(op, 5)? + bytes(op, 6)?;
    cost(op, n * (7 + weighted), written)
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
}
