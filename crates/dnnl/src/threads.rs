//! Setting oneDNN's thread count between replays in one process.
//!
//! `OMP_NUM_THREADS` is read once, when the OpenMP runtime starts, so a plan that replays the
//! iteration at 1, 2, … threads sets the count through the runtime itself:
//! `omp_set_num_threads`, looked up through the oneDNN library (its OpenMP runtime is one of its
//! dependencies, which `dlsym` on its handle searches). oneDNN reads `omp_get_max_threads()`
//! when it creates a primitive and keys its primitive cache by it, so primitives created after
//! the call use the new count. A oneDNN built for TBB or a thread pool has no such symbol: the
//! error says to run one `profilednn replay --threads T` per count instead.

use crate::api::{Dnnl, RUNTIME_SYCL};
use libloading::Library;
use std::ffi::c_int;
use std::path::Path;

/// Sets the OpenMP thread count of the loaded oneDNN `d` and checks it held.
pub(crate) fn set(d: &Dnnl, threads: u64) -> Result<(), String> {
    let lib = d.api.path.as_path();
    if d.cpu_runtime == RUNTIME_SYCL {
        // Its CPU engine runs on the SYCL CPU device, whose thread count OpenMP does not set
        // (pip's `onednn` 2026.x: it uses every core).
        return Err(format!(
            "{}: a SYCL (DPC++) build of oneDNN, whose thread count cannot be set; use an \
             OpenMP build (pip install onednn-cpu-gomp==2023.2.0) with --dnnl-lib",
            lib.display()
        ));
    }
    let n = c_int::try_from(threads).map_err(|_| format!("{threads} threads is too many"))?;
    // SAFETY: the library is already loaded (this only takes another reference to it); the two
    // functions have OpenMP's C signatures and touch only the runtime's own state.
    unsafe {
        let l = Library::new(lib).map_err(|e| format!("{}: {e}", lib.display()))?;
        let set = l
            .get::<unsafe extern "C" fn(c_int)>(b"omp_set_num_threads\0")
            .map_err(|_| no_openmp(lib))?;
        let get = l
            .get::<unsafe extern "C" fn() -> c_int>(b"omp_get_max_threads\0")
            .map_err(|_| no_openmp(lib))?;
        set(n);
        let now = get();
        if now != n {
            return Err(format!(
                "asked OpenMP for {n} threads, it runs {now} (OMP_THREAD_LIMIT?)"
            ));
        }
    }
    Ok(())
}

/// The OpenMP thread count of the loaded oneDNN `d` (`omp_get_max_threads`), if it has one.
pub(crate) fn get(d: &Dnnl) -> Option<u64> {
    if d.cpu_runtime == RUNTIME_SYCL {
        return None;
    }
    // SAFETY: as in `set`: the library is loaded, the function has OpenMP's signature.
    unsafe {
        let l = Library::new(d.api.path.as_path()).ok()?;
        let get = l
            .get::<unsafe extern "C" fn() -> c_int>(b"omp_get_max_threads\0")
            .ok()?;
        u64::try_from(get()).ok()
    }
}

fn no_openmp(lib: &Path) -> String {
    format!(
        "{}: no OpenMP runtime found (a TBB or thread-pool build of oneDNN?): the plan sets the \
         thread count through OpenMP; run `profilednn replay LOG --threads T --batch B` once per \
         split instead",
        lib.display()
    )
}
