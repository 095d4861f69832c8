//! Element-wise ops, reductions, copies and embeddings. `N` is the output's elements (the
//! inputs' shapes broadcast); each is memory-bound, so the bytes matter more than the count:
//! - arithmetic and activations (`add`, `mul`, `gelu`, `relu`, `dropout`, …, in place or not):
//!   one operation per output element; the backward of an activation two (oneDNN's eltwise);
//! - reductions (`sum`, `mean`): one per input element; their (small) output is not counted;
//! - copies and conversions (`copy_`, `clone`, `_to_copy`), fills (`fill_`, `zero_`): no
//!   operation, the bytes of what they read and write (`_to_copy` writes at the `dtype` its
//!   `Concrete Inputs` give: an f32 → bf16 cast writes 2 bytes an element);
//! - `embedding`: no operation, the rows gathered (read and written); its backward, one add per
//!   gradient element, and the weight's whole gradient written (`num_weights` rows).
//!
//! Bytes: every tensor argument read once and the output (`N` elements at the first tensor's
//! type) written once.

use super::tensor::written as cost;
use super::tensor::{count, dims, first_element_bytes, is_tensor, output_element_bytes, precision};
use super::{Model, OpCall};
use crate::count::{product, N};
use crate::{Cost, Unknown};

pub(super) fn model(bare: &str) -> Option<Model> {
    let base = bare.trim_end_matches('_');
    Some(match base {
        "add" | "sub" | "mul" | "div" | "rsub" | "neg" | "exp" | "log" | "sqrt" | "rsqrt"
        | "pow" | "reciprocal" | "abs" | "clamp" | "clamp_min" | "clamp_max" | "maximum"
        | "minimum" | "where" | "masked_fill" | "addcmul" | "addcdiv" | "lerp" | "gelu"
        | "relu" | "silu" | "tanh" | "sigmoid" | "threshold" | "hardtanh" | "leaky_relu"
        | "dropout" | "native_dropout" => per_element(1),
        "gelu_backward"
        | "silu_backward"
        | "tanh_backward"
        | "sigmoid_backward"
        | "threshold_backward"
        | "native_dropout_backward"
        | "hardtanh_backward" => per_element(2),
        "sum" | "mean" => reduction,
        "_to_copy" => to_copy,
        "copy" | "clone" | "contiguous" | "fill" | "zero" => per_element(0),
        "embedding" => embedding,
        "embedding_dense_backward" => embedding_backward,
        _ => return None,
    })
}

/// The broadcast of every tensor argument's shape, as an element count; unknown without a
/// shaped tensor argument (a tensor list's nested shapes, a trace without shapes): nothing is
/// guessed.
fn broadcast(op: &OpCall) -> Result<N, Unknown> {
    if !(0..op.dims.len()).any(|i| is_tensor(op, i)) {
        return Err(crate::unknown(format!(
            "{}: no shaped tensor argument",
            op.name
        )));
    }
    let mut out: Vec<u64> = Vec::new();
    for i in (0..op.dims.len()).filter(|&i| is_tensor(op, i)) {
        let d = dims(op, i)?;
        if d.len() > out.len() {
            let mut wider = vec![1; d.len() - out.len()];
            wider.extend(&out);
            out = wider;
        }
        let pad = out.len() - d.len();
        for (j, &x) in d.iter().enumerate() {
            out[pad + j] = out[pad + j].max(x);
        }
    }
    Ok(product(&out))
}

/// `per` operations per output element.
fn per_element(per: u64) -> Model {
    match per {
        0 => |op| {
            let n = broadcast(op)?;
            cost(op, N::ZERO, n * output_element_bytes(op))
        },
        1 => |op| {
            let n = broadcast(op)?;
            cost(op, n, n * output_element_bytes(op))
        },
        _ => |op| {
            let n = broadcast(op)?;
            cost(op, n * 2u64, n * output_element_bytes(op))
        },
    }
}

/// `(self, dims, …)`: one operation per input element.
fn reduction(op: &OpCall) -> Result<Cost, Unknown> {
    let n = product(&dims(op, 0)?);
    cost(op, n, N::ZERO)
}

/// `(weight [V, D], indices [...])`: `indices × D` elements gathered and written.
fn embedding(op: &OpCall) -> Result<Cost, Unknown> {
    let w = dims(op, 0)?;
    let d = *w.last().unwrap_or(&0);
    let rows = product(&dims(op, 1)?) * d * first_element_bytes(op);
    // The weight is not read whole: only the gathered rows, then written.
    let indices = super::tensor::bytes(op, 1)?;
    Ok(Cost {
        flops: 0,
        extra_flops: 0,
        bytes: count(op, indices + rows * 2u64, "bytes")?,
        precision: precision(op),
    })
}

/// `(grad [..., D], indices, num_weights, padding_idx, scale_grad_by_freq)`: one add per
/// gradient element into the rows of the weight's gradient, which is written whole
/// (`num_weights × D`, zeroed then accumulated: from `Concrete Inputs`; without it, the rows
/// touched).
fn embedding_backward(op: &OpCall) -> Result<Cost, Unknown> {
    let g = dims(op, 0)?;
    let n = product(&g);
    let d = *g.last().unwrap_or(&0);
    let rows = op
        .concrete
        .get(2)
        .and_then(|s| s.trim().parse::<u64>().ok());
    let written = match rows {
        Some(v) => N::from(v) * d,
        None => n,
    };
    cost(op, n, written * output_element_bytes(op))
}

/// Bytes of an element of PyTorch's `ScalarType` number `code`, as `Concrete Inputs` gives a
/// `dtype` argument (`6` float, `15` bfloat16, …).
fn scalar_type_bytes(code: &str) -> Option<u64> {
    Some(match code.trim().parse::<u32>().ok()? {
        0 | 1 | 11 | 12 | 13 | 23 | 24 | 25 | 26 => 1,
        2 | 5 | 15 => 2,
        3 | 6 | 14 => 4,
        4 | 7 | 9 => 8,
        8 => 4,
        10 => 16,
        _ => return None,
    })
}

/// `_to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format)`: the
/// input read, the output written at the `dtype` asked for (autocast's f32 → bf16 casts write
/// half the bytes they read); no dtype, the input's.
fn to_copy(op: &OpCall) -> Result<Cost, Unknown> {
    let n = broadcast(op)?;
    let e = op
        .concrete
        .get(1)
        .and_then(|c| scalar_type_bytes(c))
        .unwrap_or_else(|| output_element_bytes(op));
    cost(op, N::ZERO, n * e)
}

#[cfg(test)]
mod tests {
    use super::super::{cost, strings, OpCall};

    #[test]
    fn element_wise_by_hand() {
        // add of [4, 64, 128] and a broadcast [128], alpha a scalar: N = 32768.
        let n = 4 * 64 * 128;
        let dims = [vec![4, 64, 128], vec![128], vec![]];
        let types = strings(&["float", "float", "Scalar"]);
        let c = cost(&OpCall {
            name: "aten::add",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, n);
        assert_eq!(c.bytes, 4 * (n + 128 + n));
        // gelu_backward in bf16: 2N.
        let dims = [vec![256, 512], vec![256, 512], vec![]];
        let types = strings(&["c10::BFloat16", "c10::BFloat16", "std::string"]);
        let c = cost(&OpCall {
            name: "aten::gelu_backward",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 2 * 256 * 512);
        assert_eq!(c.bytes, 2 * 3 * 256 * 512);
        // embedding: weight [512, 128], indices [4, 64] (int64): 256 rows of 128 gathered.
        let dims = [vec![512, 128], vec![4, 64], vec![], vec![], vec![]];
        let types = strings(&["float", "long int", "Scalar", "Scalar", "Scalar"]);
        let c = cost(&OpCall {
            name: "aten::embedding",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 0);
        assert_eq!(c.bytes, 8 * 256 + 2 * 4 * 256 * 128);
        // An in-place copy: no operation, source read and destination written.
        let dims = [vec![1000], vec![1000], vec![]];
        let types = strings(&["float", "float", "Scalar"]);
        let c = cost(&OpCall {
            name: "aten::copy_",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!((c.flops, c.bytes), (0, 4 * 3000));
        // where(condition, self, other): the output is at the values' type, not the mask's.
        let dims = [vec![64], vec![64], vec![]];
        let types = strings(&["bool", "long int", "Scalar"]);
        let c = cost(&OpCall {
            name: "aten::where",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.bytes, 64 + 8 * 64 + 8 * 64);
        // A tensor list (nested shapes read as none): unknown, not 1 flop and 4 bytes.
        let dims = [vec![], vec![], vec![]];
        let types = strings(&["TensorList", "TensorList", "Scalar"]);
        assert!(cost(&OpCall {
            name: "aten::mul_",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .is_err());
    }

    /// The GPT-bf16 fixture's calls: autocast's cast of a [128, 128] weight to bf16
    /// (`dtype` 15), and the token embedding's backward (grad [4, 64, 128] into 512 rows).
    #[test]
    fn casts_and_embedding_gradient_by_hand() {
        let dims = [
            vec![128, 128],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types = strings(&["float", "Scalar", "", "", "", "Scalar", ""]);
        let concrete = strings(&["", "15", "", "", "", "False", ""]);
        let c = cost(&OpCall {
            name: "aten::_to_copy",
            dims: &dims,
            types: &types,
            concrete: &concrete,
            ..Default::default()
        })
        .unwrap();
        assert_eq!((c.flops, c.bytes), (0, 4 * 128 * 128 + 2 * 128 * 128));
        // Without the dtype, the input's.
        let c = cost(&OpCall {
            name: "aten::_to_copy",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.bytes, 8 * 128 * 128);
        let n = 4 * 64 * 128;
        let dims = [vec![4, 64, 128], vec![4, 64], vec![], vec![], vec![]];
        let types = strings(&["float", "long int", "Scalar", "Scalar", "Scalar"]);
        let concrete = strings(&["", "", "512", "-1", "False"]);
        let c = cost(&OpCall {
            name: "aten::embedding_dense_backward",
            dims: &dims,
            types: &types,
            concrete: &concrete,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, n);
        assert_eq!(c.bytes, 4 * n + 8 * 4 * 64 + 4 * 512 * 128);
    }
}
