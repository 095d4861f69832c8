//! The fused optimizer kernels of `torch.optim` (`fused=True`): `_fused_adamw_`, `_fused_adam_`
//! and `_fused_sgd_`, one call updating every parameter. (The `foreach=True` ops,
//! `_foreach_mul_` and the like, need no model here: on CPU PyTorch runs each as a loop of the
//! per-tensor op, which the trace nests under it and the element-wise model costs.)
//!
//! The trace types every tensor list `TensorList`, not its elements: they are costed as f32,
//! the type of `torch.optim`'s parameters and state in a model trained in f32 or under
//! autocast (a model cast to bf16 as a whole is priced at twice its bytes). Each arithmetic
//! operation per parameter element counts 1, as in the element-wise model, from the kernels'
//! update (`aten/src/ATen/native/cpu/FusedAdamKernel.cpp`, `FusedSGDKernel.cpp`):
//! - AdamW: `p *= 1 − lr·wd` (1), `m = β1·m + (1 − β1)·g` (3), `v = β2·v + (1 − β2)·g²` (4),
//!   `denom = √v / √bc2 + ε` (3), `p −= (lr / bc1)·m / denom` (3): 14; Adam's L2 decay
//!   `g += wd·p` is 2 instead of 1 (none when `weight_decay` is 0); AMSGrad's `max` 1 more.
//!   Bytes: `p g m v` read, `p m v` written (AMSGrad: its `v̂` read and written).
//! - SGD: `g += wd·p` (2, when `weight_decay` ≠ 0), `b = μ·b + (1 − dampening)·g` (3, when
//!   `momentum` ≠ 0), Nesterov's `g += μ·b` (2), `p −= lr·g` (2). Bytes: `p g` read, `p`
//!   written, and the momentum buffer read and written.

use super::tensor::count;
use super::{Model, OpCall};
use crate::count::{product, N};
use crate::{unknown, Cost, MathPrecision, Unknown};

pub(super) fn model(bare: &str) -> Option<Model> {
    Some(match bare {
        "_fused_adamw_" | "_fused_adamw" => adamw,
        "_fused_adam_" | "_fused_adam" => adam,
        "_fused_sgd_" | "_fused_sgd" => sgd,
        _ => return None,
    })
}

/// The elements of the parameters (the first tensor list).
fn elements(op: &OpCall) -> Result<N, Unknown> {
    let params = op.lists.first().filter(|l| !l.is_empty()).ok_or_else(|| {
        unknown(format!(
            "{}: no parameter list in the trace's shapes",
            op.name
        ))
    })?;
    let mut n = N::ZERO;
    for shape in params {
        let d: Vec<u64> = shape
            .iter()
            .map(|&x| u64::try_from(x))
            .collect::<Result<_, _>>()
            .map_err(|_| unknown(format!("{}: a negative dimension", op.name)))?;
        // A 0-dimensional parameter is one element.
        n += product(&d);
    }
    Ok(n)
}

/// A hyper-parameter from `Concrete Inputs`.
fn value(op: &OpCall, i: usize, what: &str) -> Result<f64, Unknown> {
    op.concrete
        .get(i)
        .and_then(|s| s.trim().parse::<f64>().ok())
        .ok_or_else(|| {
            unknown(format!(
                "{}: no {what} in the trace's Concrete Inputs",
                op.name
            ))
        })
}

fn flag(op: &OpCall, i: usize) -> bool {
    op.concrete.get(i).is_some_and(|s| s.trim() == "True")
}

/// `flops_per` operations and `tensors` f32 tensors' traffic per parameter element.
fn per_element(op: &OpCall, flops_per: u64, tensors: u64) -> Result<Cost, Unknown> {
    let n = elements(op)?;
    Ok(Cost {
        flops: count(op, n * flops_per, "flops")?,
        extra_flops: 0,
        bytes: count(op, n * (tensors * 4), "bytes")?,
        precision: MathPrecision::F32,
    })
}

/// `_fused_adam(w)_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
/// beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf)`.
fn adam_like(op: &OpCall, decoupled: bool) -> Result<Cost, Unknown> {
    let wd = value(op, 9, "weight_decay")?;
    let amsgrad = flag(op, 11);
    let decay = match (wd == 0.0, decoupled) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => 2,
    };
    let flops = decay + 3 + 4 + 3 + 3 + u64::from(amsgrad);
    let tensors = 7 + if amsgrad { 2 } else { 0 };
    per_element(op, flops, tensors)
}

fn adamw(op: &OpCall) -> Result<Cost, Unknown> {
    adam_like(op, true)
}

fn adam(op: &OpCall) -> Result<Cost, Unknown> {
    adam_like(op, false)
}

/// `_fused_sgd_(params, grads, momentum_buffer_list, weight_decay, momentum, lr, dampening,
/// nesterov, maximize, is_first_step, grad_scale, found_inf)`.
fn sgd(op: &OpCall) -> Result<Cost, Unknown> {
    let wd = value(op, 3, "weight_decay")?;
    let momentum = value(op, 4, "momentum")?;
    let nesterov = flag(op, 7);
    let mut flops = 2;
    let mut tensors = 3;
    if wd != 0.0 {
        flops += 2;
    }
    if momentum != 0.0 {
        flops += 3 + if nesterov { 2 } else { 0 };
        tensors += 2;
    }
    per_element(op, flops, tensors)
}

#[cfg(test)]
mod tests {
    use super::super::{cost, OpCall};

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// Parameters [4, 3], [3] and a 0-dimensional one: 16 elements.
    fn lists() -> Vec<Vec<Vec<i64>>> {
        let params = vec![vec![4, 3], vec![3], vec![]];
        vec![
            params.clone(),
            params.clone(),
            params.clone(),
            params,
            vec![],
            vec![],
        ]
    }

    fn adam(name: &str, wd: &str, amsgrad: &str) -> crate::Cost {
        let lists = lists();
        let dims = vec![vec![]; 15];
        let mut types = s(&["TensorList"; 6]);
        types.extend(s(&["Scalar"; 7]));
        types.extend(s(&["", ""]));
        let concrete = s(&[
            "", "", "", "", "", "", "0.001", "0.9", "0.999", wd, "1e-08", amsgrad, "False", "", "",
        ]);
        cost(&OpCall {
            name,
            dims: &dims,
            types: &types,
            lists: &lists,
            concrete: &concrete,
        })
        .unwrap()
    }

    #[test]
    fn adam_by_hand() {
        // AdamW: 14 operations and 7 f32 tensors' traffic per element.
        let c = adam("aten::_fused_adamw_", "0.01", "False");
        assert_eq!((c.flops, c.bytes), (14 * 16, 7 * 4 * 16));
        // Adam's L2 decay is 2 operations; AMSGrad one more, and its buffer read and written.
        let c = adam("aten::_fused_adam_", "0.01", "True");
        assert_eq!((c.flops, c.bytes), (16 * 16, 9 * 4 * 16));
        let c = adam("aten::_fused_adam_", "0", "False");
        assert_eq!(c.flops, 13 * 16);
    }

    #[test]
    fn sgd_by_hand() {
        let lists = lists();
        let dims = vec![vec![]; 12];
        let types = s(&[
            "TensorList",
            "TensorList",
            "TensorList",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar",
            "Scalar",
            "",
            "",
        ]);
        let call = |wd: &str, momentum: &str, nesterov: &str| {
            let concrete = s(&[
                "", "", "", wd, momentum, "0.01", "0", nesterov, "False", "False", "", "",
            ]);
            cost(&OpCall {
                name: "aten::_fused_sgd_",
                dims: &dims,
                types: &types,
                lists: &lists,
                concrete: &concrete,
            })
            .unwrap()
        };
        // Plain SGD: p −= lr·g, p and g read, p written.
        let c = call("0", "0", "False");
        assert_eq!((c.flops, c.bytes), (2 * 16, 3 * 4 * 16));
        // Momentum 0.9 with Nesterov and weight decay: 2 + 3 + 2 + 2, the buffer read and written.
        let c = call("0.0001", "0.9", "True");
        assert_eq!((c.flops, c.bytes), (9 * 16, 5 * 4 * 16));
    }

    /// Without the parameter list's shapes (a trace without them): uncosted.
    #[test]
    fn no_shapes_is_uncosted() {
        let dims = vec![vec![]; 15];
        let types = s(&["TensorList"; 15]);
        assert!(cost(&OpCall {
            name: "aten::_fused_adamw_",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .is_err());
    }
}
