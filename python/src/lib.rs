//! `profilednn._native`: the kernels on raw CPU buffers handed over by the Python wrappers,
//! which check device, dtype, shape and contiguity first (the pointers are the tensors' own
//! storage: no copy). The GIL is released while a kernel runs.

use profilednn_kernels::focal::{self, Params, Reduction, Targets, Tensor, TensorMut};
use profilednn_kernels::optim::{
    self, AdamBf16State, AdamConfig, AdamState, Grad, LambConfig, SgdBf16Tensor, SgdConfig,
    SgdTensor,
};
use profilednn_kernels::Isa;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

// dtype codes shared with the Python side.
const F32: u8 = 0;
const BF16: u8 = 1;
const I64: u8 = 2;
/// Optimizer parameters only: bf16 whose f32 master's bottom 16 bits are kept apart (the
/// "master" pointer then points to those `u16` halves).
const BF16_SPLIT: u8 = 3;
/// Optimizer parameters only: bf16 with bf16 state and no master (torch's `fused=True`
/// layout); the state pointers point to `u16`.
const BF16_STATE: u8 = 4;

/// # Safety
/// The caller (the Python wrapper) guarantees `ptr` points at `n` live, contiguous elements of
/// `dtype` for the duration of the call.
unsafe fn tensor<'a>(ptr: usize, n: usize, dtype: u8) -> PyResult<Tensor<'a>> {
    Ok(match dtype {
        F32 => Tensor::F32(std::slice::from_raw_parts(ptr as *const f32, n)),
        BF16 => Tensor::Bf16(std::slice::from_raw_parts(ptr as *const u16, n)),
        d => return Err(PyValueError::new_err(format!("unsupported dtype code {d}"))),
    })
}

/// # Safety
/// As [`tensor`], and no other reference to those elements exists during the call.
unsafe fn tensor_mut<'a>(ptr: usize, n: usize, dtype: u8) -> PyResult<TensorMut<'a>> {
    Ok(match dtype {
        F32 => TensorMut::F32(std::slice::from_raw_parts_mut(ptr as *mut f32, n)),
        BF16 => TensorMut::Bf16(std::slice::from_raw_parts_mut(ptr as *mut u16, n)),
        d => return Err(PyValueError::new_err(format!("unsupported dtype code {d}"))),
    })
}

/// Targets: dense (`t_dtype` F32/BF16, `n` elements) or class labels (`I64`, `n / classes` rows).
///
/// # Safety
/// As [`tensor`], for `n` elements of `t_dtype` (or `n / classes` i64 labels).
unsafe fn targets<'a>(
    ptr: usize,
    n: usize,
    t_dtype: u8,
    classes: usize,
    ignore: i64,
) -> PyResult<Targets<'a>> {
    Ok(if t_dtype == I64 {
        let rows = n.checked_div(classes).unwrap_or(0);
        Targets::Classes {
            labels: std::slice::from_raw_parts(ptr as *const i64, rows),
            classes,
            ignore_index: ignore,
        }
    } else {
        Targets::Dense(tensor(ptr, n, t_dtype)?)
    })
}

fn reduction(r: u8) -> Reduction {
    match r {
        0 => Reduction::None,
        1 => Reduction::Mean,
        _ => Reduction::Sum,
    }
}

fn err(e: focal::FocalError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn focal_forward(
    py: Python,
    x: usize,
    n: usize,
    dtype: u8,
    t: usize,
    t_dtype: u8,
    classes: usize,
    ignore: i64,
    alpha: f32,
    gamma: f32,
    red: u8,
    out: usize,
    threads: usize,
) -> PyResult<f32> {
    // SAFETY: the Python wrapper (`profilednn/ops.py`, `optim.py`) passes `data_ptr()`s of
    // live, contiguous CPU tensors of the element counts and dtype codes given, which it keeps
    // referenced for the call; the GIL is released, but no Python code can free them meanwhile.
    py.allow_threads(|| unsafe {
        let out = if out == 0 {
            None
        } else {
            Some(tensor_mut(out, n, dtype)?)
        };
        focal::forward(
            Isa::detect(),
            threads,
            tensor(x, n, dtype)?,
            targets(t, n, t_dtype, classes, ignore)?,
            Params { alpha, gamma },
            reduction(red),
            out,
        )
        .map_err(err)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn focal_backward(
    py: Python,
    x: usize,
    n: usize,
    dtype: u8,
    t: usize,
    t_dtype: u8,
    classes: usize,
    ignore: i64,
    alpha: f32,
    gamma: f32,
    red: u8,
    grad_scalar: f32,
    grad_out: usize,
    grad_in: usize,
    threads: usize,
) -> PyResult<()> {
    // SAFETY: the Python wrapper (`profilednn/ops.py`, `optim.py`) passes `data_ptr()`s of
    // live, contiguous CPU tensors of the element counts and dtype codes given, which it keeps
    // referenced for the call; the GIL is released, but no Python code can free them meanwhile.
    py.allow_threads(|| unsafe {
        let go = if grad_out == 0 {
            None
        } else {
            Some(tensor(grad_out, n, dtype)?)
        };
        focal::backward(
            Isa::detect(),
            threads,
            tensor(x, n, dtype)?,
            targets(t, n, t_dtype, classes, ignore)?,
            Params { alpha, gamma },
            reduction(red),
            grad_scalar,
            go,
            tensor_mut(grad_in, n, dtype)?,
        )
        .map_err(err)
    })
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn focal_forward_backward(
    py: Python,
    x: usize,
    n: usize,
    dtype: u8,
    t: usize,
    t_dtype: u8,
    classes: usize,
    ignore: i64,
    alpha: f32,
    gamma: f32,
    red: u8,
    grad_scale: f32,
    grad_in: usize,
    threads: usize,
) -> PyResult<f32> {
    // SAFETY: the Python wrapper (`profilednn/ops.py`, `optim.py`) passes `data_ptr()`s of
    // live, contiguous CPU tensors of the element counts and dtype codes given, which it keeps
    // referenced for the call; the GIL is released, but no Python code can free them meanwhile.
    py.allow_threads(|| unsafe {
        focal::forward_backward(
            Isa::detect(),
            threads,
            tensor(x, n, dtype)?,
            targets(t, n, t_dtype, classes, ignore)?,
            Params { alpha, gamma },
            reduction(red),
            grad_scale,
            tensor_mut(grad_in, n, dtype)?,
        )
        .map_err(err)
    })
}

/// Parameter storage from (param ptr, dtype, master ptr): bf16 with an f32 master when master
/// != 0, or with the master's bottom halves (`BF16_SPLIT`).
///
/// # Safety
/// As [`tensor_mut`], for `p` and for `master` when it is not 0.
unsafe fn params<'a>(p: usize, n: usize, dtype: u8, master: usize) -> PyResult<optim::Params<'a>> {
    Ok(match (dtype, master) {
        (F32, _) => optim::Params::F32(std::slice::from_raw_parts_mut(p as *mut f32, n)),
        (BF16, m) if m != 0 => optim::Params::Bf16Master {
            param: std::slice::from_raw_parts_mut(p as *mut u16, n),
            master: std::slice::from_raw_parts_mut(m as *mut f32, n),
        },
        (BF16_SPLIT, m) if m != 0 => optim::Params::Bf16Split {
            param: std::slice::from_raw_parts_mut(p as *mut u16, n),
            low: std::slice::from_raw_parts_mut(m as *mut u16, n),
        },
        _ => {
            return Err(PyValueError::new_err(
                "bf16 parameters need an f32 master copy or its bottom halves",
            ))
        }
    })
}

/// The gradient of a parameter of type `dtype` (bf16 for both bf16 layouts).
///
/// # Safety
/// As [`tensor`], for `n` elements of `dtype`.
unsafe fn grad<'a>(g: usize, n: usize, dtype: u8) -> Grad<'a> {
    if dtype == BF16 || dtype == BF16_SPLIT {
        Grad::Bf16(std::slice::from_raw_parts(g as *const u16, n))
    } else {
        Grad::F32(std::slice::from_raw_parts(g as *const f32, n))
    }
}

/// `tensors`: (param, grad, momentum buffer or 0, numel, dtype, master or 0) per parameter.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn sgd_step(
    py: Python,
    tensors: Vec<(usize, usize, usize, usize, u8, usize)>,
    first: bool,
    lr: f32,
    momentum: f32,
    dampening: f32,
    weight_decay: f32,
    nesterov: bool,
    maximize: bool,
    threads: usize,
) -> PyResult<()> {
    let c = SgdConfig {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
    };
    // SAFETY: the Python wrapper (`profilednn/ops.py`, `optim.py`) passes `data_ptr()`s of
    // live, contiguous CPU tensors of the element counts and dtype codes given, which it keeps
    // referenced for the call; the GIL is released, but no Python code can free them meanwhile.
    py.allow_threads(|| unsafe {
        let (mut ts, mut bf) = (Vec::new(), Vec::new());
        for (p, g, b, n, dt, m) in tensors {
            if dt == BF16_STATE {
                bf.push(SgdBf16Tensor {
                    param: std::slice::from_raw_parts_mut(p as *mut u16, n),
                    grad: std::slice::from_raw_parts(g as *const u16, n),
                    momentum_buffer: (b != 0)
                        .then(|| std::slice::from_raw_parts_mut(b as *mut u16, n)),
                    first,
                });
                continue;
            }
            ts.push(SgdTensor {
                params: params(p, n, dt, m)?,
                grad: grad(g, n, dt),
                momentum_buffer: (b != 0).then(|| std::slice::from_raw_parts_mut(b as *mut f32, n)),
                first,
            });
        }
        optim::sgd_step(Isa::detect(), threads, &mut ts, &c);
        optim::sgd_step_bf16(Isa::detect(), threads, &mut bf, &c);
        Ok(())
    })
}

/// One Adam tensor from Python: (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq or 0, numel,
/// dtype, master or 0), pointers as integers.
type AdamTensor = (usize, usize, usize, usize, usize, usize, u8, usize);

/// `tensors`: (param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq or 0, numel, dtype, master or 0);
/// `step` is the step count before this one (the same for all tensors of a group).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn adam_step(
    py: Python,
    tensors: Vec<AdamTensor>,
    step: u64,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    decoupled: bool,
    amsgrad: bool,
    maximize: bool,
    lamb: bool,
    threads: usize,
) -> PyResult<()> {
    let c = AdamConfig {
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        decoupled,
        amsgrad,
        maximize,
    };
    // SAFETY: the Python wrapper (`profilednn/ops.py`, `optim.py`) passes `data_ptr()`s of
    // live, contiguous CPU tensors of the element counts and dtype codes given, which it keeps
    // referenced for the call; the GIL is released, but no Python code can free them meanwhile.
    py.allow_threads(|| unsafe {
        let (mut st, mut bf) = (Vec::new(), Vec::new());
        for (p, g, m, v, mx, n, dt, master) in tensors {
            if dt == BF16_STATE {
                if lamb || amsgrad {
                    return Err(PyValueError::new_err(
                        "bf16 state (master=\"none\") is for SGD, Adam and AdamW without amsgrad",
                    ));
                }
                bf.push(AdamBf16State {
                    param: std::slice::from_raw_parts_mut(p as *mut u16, n),
                    grad: std::slice::from_raw_parts(g as *const u16, n),
                    exp_avg: std::slice::from_raw_parts_mut(m as *mut u16, n),
                    exp_avg_sq: std::slice::from_raw_parts_mut(v as *mut u16, n),
                    step,
                });
                continue;
            }
            st.push(AdamState {
                params: params(p, n, dt, master)?,
                grad: grad(g, n, dt),
                exp_avg: std::slice::from_raw_parts_mut(m as *mut f32, n),
                exp_avg_sq: std::slice::from_raw_parts_mut(v as *mut f32, n),
                max_exp_avg_sq: (mx != 0)
                    .then(|| std::slice::from_raw_parts_mut(mx as *mut f32, n)),
                step,
            });
        }
        if lamb {
            let c = LambConfig {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            };
            optim::lamb_step(Isa::detect(), threads, &mut st, &c);
        } else {
            optim::adam_step(Isa::detect(), threads, &mut st, &c);
            optim::adam_step_bf16(Isa::detect(), threads, &mut bf, &c);
        }
        Ok(())
    })
}

/// Runs the kernels on the OpenMP team of the libgomp at `path` (PyTorch's, already loaded),
/// or on std threads again with `None`. Returns whether the OpenMP runtime is in use.
#[pyfunction]
#[pyo3(signature = (path=None))]
fn use_openmp(path: Option<String>) -> PyResult<bool> {
    let Some(path) = path else {
        // SAFETY: unregistering.
        unsafe { profilednn_kernels::pool::use_openmp(None) };
        return Ok(false);
    };
    let c = std::ffi::CString::new(path.clone())
        .map_err(|_| PyValueError::new_err("path contains a NUL byte"))?;
    // SAFETY: RTLD_NOLOAD only returns a handle to a library that is already loaded (never
    // loads or initialises a new one); the handle is never closed, so the symbol stays valid.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            return Err(PyValueError::new_err(format!(
                "{path}: not a loaded library"
            )));
        }
        let f = libc::dlsym(h, c"GOMP_parallel".as_ptr());
        if f.is_null() {
            return Err(PyValueError::new_err(format!(
                "{path}: no GOMP_parallel (not libgomp)"
            )));
        }
        profilednn_kernels::pool::use_openmp(Some(f as *const std::ffi::c_void));
    }
    Ok(true)
}

/// Whether the kernels run on an OpenMP team (else std threads).
#[pyfunction]
fn openmp() -> bool {
    profilednn_kernels::pool::openmp()
}

#[pyfunction]
fn isa() -> &'static str {
    Isa::detect().name()
}

/// The CPU's model and the features that decide which paths run natively.
#[pyfunction]
fn cpu_features(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item(
        "model",
        profilednn_machine::cpu::model_name().unwrap_or_else(|| "this CPU".into()),
    )?;
    d.set_item("isa", profilednn_isa::Isa::best().name())?;
    d.set_item("avx512_bf16", profilednn_isa::avx512_bf16())?;
    d.set_item("amx_bf16", profilednn_isa::amx_bf16())?;
    Ok(d)
}

/// Memory bandwidth of one of `profilednn peak`'s kernels (`read`, `copy`, `triad`, `update`),
/// or of the four-stream read `read4` (benchmarks' floors), over `working_set` bytes on `threads`
/// threads: arrays allocated and first-touched before timing
/// (warm, page-faulted), best of `runs`. Returns (GB/s as STREAM counts, GB/s of the bytes
/// the memory system moves, write-allocate included): a bound for a kernel that writes with
/// non-temporal stores or in place must use the second, or the kernel beats its "bound".
/// `cpu_time`: timed by the slowest thread's CPU time (for benchmarks timed the same way).
#[pyfunction]
#[pyo3(signature = (kernel, working_set, threads, runs, cpu_time=false))]
fn bandwidth(
    py: Python,
    kernel: &str,
    working_set: u64,
    threads: usize,
    runs: u32,
    cpu_time: bool,
) -> PyResult<(f64, f64)> {
    use profilednn_machine::measure::bandwidth::{run_timed, Clock, Kernel};
    let k = Kernel::from_name(kernel).ok_or_else(|| {
        PyValueError::new_err(format!(
            "{kernel}: expected read, copy, triad, update or read4"
        ))
    })?;
    let clock = if cpu_time {
        Clock::ThreadCpu
    } else {
        Clock::Wall
    };
    let p =
        py.allow_threads(|| run_timed(k, working_set, threads.max(1), working_set, runs, clock));
    Ok((p.gbps, p.gbps * k.moved_per_counted()))
}

/// The code path each kernel takes on this CPU (what benchmarks print beside their figures).
#[pyfunction]
fn kernel_paths(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let isa = Isa::detect();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("focal f32", focal::path(isa, false, 2.0))?;
    d.set_item("focal bf16", focal::path(isa, true, 2.0))?;
    d.set_item("optimizers", optim::path(isa))?;
    Ok(d)
}

/// The `profilednn` command line (argv with the program name first): runs it with the GIL
/// released and exits the process with its status, as the binary would.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) {
    let code = py.allow_threads(|| profilednn_cli::run(argv));
    // `exit` skips Rust's buffered stdout: flush what the command printed.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(code.0.into())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(focal_forward, m)?)?;
    m.add_function(wrap_pyfunction!(focal_backward, m)?)?;
    m.add_function(wrap_pyfunction!(focal_forward_backward, m)?)?;
    m.add_function(wrap_pyfunction!(sgd_step, m)?)?;
    m.add_function(wrap_pyfunction!(adam_step, m)?)?;
    m.add_function(wrap_pyfunction!(isa, m)?)?;
    m.add_function(wrap_pyfunction!(use_openmp, m)?)?;
    m.add_function(wrap_pyfunction!(openmp, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_features, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_paths, m)?)?;
    Ok(())
}
