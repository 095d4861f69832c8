//! Every environment variable this crate reads, read here and only here, so that a reader of
//! the library sees at once what the environment can change. The OpenMP variables are read by
//! oneDNN's runtime itself when it starts; [`crate::Session::open`] records them as they were
//! then, and the session's thread setter (not the environment) changes the count afterwards.

use std::ffi::OsString;

/// `PROFILEDNN_DNNL_LIB`: the oneDNN library to load when none is given.
pub(crate) fn dnnl_lib() -> Option<OsString> {
    std::env::var_os("PROFILEDNN_DNNL_LIB")
}

/// `VIRTUAL_ENV`: the Python environment pip may have installed `onednn-cpu-gomp` into.
pub(crate) fn virtual_env() -> Option<OsString> {
    std::env::var_os("VIRTUAL_ENV")
}

/// Whether `OCL_ICD_FILENAMES` is set: a SYCL build's OpenCL driver, given by the user, which
/// loading a library beside its own driver must not override.
pub(crate) fn ocl_icd_set() -> bool {
    std::env::var_os("OCL_ICD_FILENAMES").is_some()
}

/// `OMP_NUM_THREADS` and `OMP_PROC_BIND`, as oneDNN's OpenMP runtime read them at start.
pub(crate) fn openmp() -> (Option<String>, Option<String>) {
    (
        std::env::var("OMP_NUM_THREADS").ok(),
        std::env::var("OMP_PROC_BIND").ok(),
    )
}

/// `PROFILEDNN_REPLAY_ZERO_FILL` (anything but `0`): zero-fill each backward call's outputs
/// before it, as a program that allocates its gradients every iteration does.
pub(crate) fn zero_fill() -> bool {
    std::env::var_os("PROFILEDNN_REPLAY_ZERO_FILL").is_some_and(|v| v != "0")
}

/// `PROFILEDNN_REPLAY_NO_FLOW`: a diagnosis switch, each call on its own buffers instead of
/// its producer's outputs.
pub(crate) fn no_flow() -> bool {
    std::env::var_os("PROFILEDNN_REPLAY_NO_FLOW").is_some()
}

/// `PROFILEDNN_DEBUG_REPLAY`: each argument's size on stderr as it is allocated.
pub(crate) fn debug_replay() -> bool {
    std::env::var_os("PROFILEDNN_DEBUG_REPLAY").is_some()
}
