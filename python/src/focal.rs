//! The sigmoid focal loss on `torch.Tensor`s: logits, targets (dense like the logits, or one
//! int64 class label per row of the last dimension) and the outputs, each checked by
//! [`crate::tensor::dense`]. The GIL is released while a kernel runs.

use crate::tensor::{check_disjoint, dense, Dense, Dtype};
use profilednn_kernels::focal::{self, Params, Reduction, Targets, Tensor, TensorMut};
use profilednn_kernels::Isa;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

fn reduction(r: u8) -> PyResult<Reduction> {
    Ok(match r {
        0 => Reduction::None,
        1 => Reduction::Mean,
        2 => Reduction::Sum,
        _ => {
            return Err(PyValueError::new_err(format!(
                "reduction code {r}: 0, 1 or 2"
            )))
        }
    })
}

fn err(e: focal::FocalError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Logits (f32 or bf16) and targets, checked against each other.
struct Inputs {
    x: Dense,
    t: Dense,
    classes: usize,
}

fn inputs(x: &Bound<'_, PyAny>, t: &Bound<'_, PyAny>) -> PyResult<Inputs> {
    let x = dense(x, "inputs")?.contiguous()?;
    if !matches!(x.dtype, Dtype::F32 | Dtype::Bf16) {
        return Err(PyTypeError::new_err("inputs: expected float32 or bfloat16"));
    }
    let t = dense(t, "targets")?;
    let classes = match t.dtype {
        Dtype::I64 => {
            let classes = x.shape.last().map_or(1, |&c| c.max(0) as usize);
            if t.n.checked_mul(classes) != Some(x.n) {
                return Err(PyValueError::new_err(format!(
                    "class-index targets: {} labels for {} logits with {classes} classes \
                     (expected one label per row of the last dimension)",
                    t.n, x.n
                )));
            }
            classes
        }
        Dtype::F32 | Dtype::Bf16 => 0,
        Dtype::I16 => return Err(PyTypeError::new_err("targets: int16 is not supported")),
    };
    let t = if t.dtype == Dtype::I64 {
        t.contiguous()?
    } else {
        t.like(&x)?
    };
    Ok(Inputs { x, t, classes })
}

/// # Safety
/// `d` stays alive and unwritten for `'a`.
unsafe fn read<'a>(d: &Dense) -> Tensor<'a> {
    match d.dtype {
        Dtype::Bf16 => Tensor::Bf16(d.slice()),
        _ => Tensor::F32(d.slice()),
    }
}

/// # Safety
/// As [`read`], and nothing else uses `d` for `'a`.
unsafe fn write<'a>(d: &Dense) -> TensorMut<'a> {
    match d.dtype {
        Dtype::Bf16 => TensorMut::Bf16(d.slice_mut()),
        _ => TensorMut::F32(d.slice_mut()),
    }
}

/// # Safety
/// As [`read`].
unsafe fn targets<'a>(i: &Inputs, ignore_index: i64) -> Targets<'a> {
    if i.t.dtype == Dtype::I64 {
        Targets::Classes {
            labels: i.t.slice(),
            classes: i.classes,
            ignore_index,
        }
    } else {
        Targets::Dense(read(&i.t))
    }
}

/// An output tensor like the logits.
fn out_like(o: &Bound<'_, PyAny>, what: &str, x: &Dense) -> PyResult<Dense> {
    dense(o, what)?.of(x.dtype)?.like(x)
}

/// The loss (reduced; with `out`, every element written there and 0 returned).
#[pyfunction]
#[pyo3(signature = (x, t, ignore, alpha, gamma, red, out, threads))]
#[allow(clippy::too_many_arguments)]
pub fn focal_forward(
    py: Python,
    x: &Bound<'_, PyAny>,
    t: &Bound<'_, PyAny>,
    ignore: i64,
    alpha: f32,
    gamma: f32,
    red: u8,
    out: Option<&Bound<'_, PyAny>>,
    threads: usize,
) -> PyResult<f32> {
    let i = inputs(x, t)?;
    let out = out.map(|o| out_like(o, "out", &i.x)).transpose()?;
    let red = reduction(red)?;
    check_disjoint(&out.iter().collect::<Vec<_>>(), &[&i.x, &i.t])?;
    // SAFETY: `x`, `t` and `out` are live CPU tensors (the Python references are held for the
    // call) read by `dense`, of the dtypes and element counts matched above; `out` overlaps
    // neither input (check_disjoint).
    // Python code in other threads (the GIL is released) must not resize or `set_()` them
    // meanwhile: ATen's own contract for the tensors an op is using.
    py.allow_threads(|| unsafe {
        focal::forward(
            Isa::detect(),
            threads,
            read(&i.x),
            targets(&i, ignore),
            Params { alpha, gamma },
            red,
            out.as_ref().map(|o| write(o)),
        )
        .map_err(err)
    })
}

/// d loss / d logits into `grad_in`, scaled by `grad_scalar` (reduced losses) or by
/// `grad_out` element by element (`red` = none).
#[pyfunction]
#[pyo3(signature = (x, t, ignore, alpha, gamma, red, grad_scalar, grad_out, grad_in, threads))]
#[allow(clippy::too_many_arguments)]
pub fn focal_backward(
    py: Python,
    x: &Bound<'_, PyAny>,
    t: &Bound<'_, PyAny>,
    ignore: i64,
    alpha: f32,
    gamma: f32,
    red: u8,
    grad_scalar: f32,
    grad_out: Option<&Bound<'_, PyAny>>,
    grad_in: &Bound<'_, PyAny>,
    threads: usize,
) -> PyResult<()> {
    let i = inputs(x, t)?;
    let go = grad_out
        .map(|g| out_like(g, "grad_out", &i.x))
        .transpose()?;
    let gi = out_like(grad_in, "grad_in", &i.x)?;
    let red = reduction(red)?;
    let mut reads = vec![&i.x, &i.t];
    reads.extend(go.iter());
    check_disjoint(&[&gi], &reads)?;
    // SAFETY: as in `focal_forward`; `grad_in` overlaps no other tensor of the call.
    py.allow_threads(|| unsafe {
        focal::backward(
            Isa::detect(),
            threads,
            read(&i.x),
            targets(&i, ignore),
            Params { alpha, gamma },
            red,
            grad_scalar,
            go.as_ref().map(|g| read(g)),
            write(&gi),
        )
        .map_err(err)
    })
}

/// The reduced loss, and its gradient (times `grad_scale`) written into `grad_in`: one pass.
#[pyfunction]
#[pyo3(signature = (x, t, ignore, alpha, gamma, red, grad_scale, grad_in, threads))]
#[allow(clippy::too_many_arguments)]
pub fn focal_forward_backward(
    py: Python,
    x: &Bound<'_, PyAny>,
    t: &Bound<'_, PyAny>,
    ignore: i64,
    alpha: f32,
    gamma: f32,
    red: u8,
    grad_scale: f32,
    grad_in: &Bound<'_, PyAny>,
    threads: usize,
) -> PyResult<f32> {
    let i = inputs(x, t)?;
    let gi = out_like(grad_in, "grad_in", &i.x)?;
    let red = reduction(red)?;
    check_disjoint(&[&gi], &[&i.x, &i.t])?;
    // SAFETY: as in `focal_forward`; `grad_in` overlaps no other tensor of the call.
    py.allow_threads(|| unsafe {
        focal::forward_backward(
            Isa::detect(),
            threads,
            read(&i.x),
            targets(&i, ignore),
            Params { alpha, gamma },
            red,
            grad_scale,
            write(&gi),
        )
        .map_err(err)
    })
}
