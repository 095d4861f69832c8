//! `profilednn._native`: the kernels on the storage of `torch.Tensor`s (no copy), each tensor
//! read and checked from the object itself (`tensor.rs`): no function here takes a pointer as
//! an integer. The GIL is released while a kernel runs.

mod focal;
mod optim;
mod tensor;

use profilednn_kernels::focal as focal_kernel;
use profilednn_kernels::optim as optim_kernel;
use profilednn_kernels::Isa;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

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
    d.set_item("focal f32", focal_kernel::path(isa, false, 2.0))?;
    d.set_item("focal bf16", focal_kernel::path(isa, true, 2.0))?;
    d.set_item("optimizers", optim_kernel::path(isa))?;
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
    m.add_function(wrap_pyfunction!(focal::focal_forward, m)?)?;
    m.add_function(wrap_pyfunction!(focal::focal_backward, m)?)?;
    m.add_function(wrap_pyfunction!(focal::focal_forward_backward, m)?)?;
    m.add_function(wrap_pyfunction!(optim::sgd_step, m)?)?;
    m.add_function(wrap_pyfunction!(optim::adam_step, m)?)?;
    m.add_function(wrap_pyfunction!(isa, m)?)?;
    m.add_function(wrap_pyfunction!(use_openmp, m)?)?;
    m.add_function(wrap_pyfunction!(openmp, m)?)?;
    m.add_function(wrap_pyfunction!(cpu_features, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_paths, m)?)?;
    Ok(())
}
