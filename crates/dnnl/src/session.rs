//! A loaded oneDNN with its CPU engine and stream: what every replay runs on. Its fields are
//! private so that the C API stays inside this crate, and the thread count it runs at is set
//! through [`Session::set_threads`], which the replay record then reports (the environment's
//! `OMP_NUM_THREADS` was read once, when OpenMP started, and no longer says).

use crate::api::{self, Dnnl, Handle};
use crate::build::chosen_layouts::ChosenLayouts;
use crate::progress::{Progress, Quiet};
use crate::run::{self, Timing};
use crate::ReplayError;
use profilednn_model::Primitive;
use profilednn_replay::{Measurement, SkipReason};
use std::cell::Cell;
use std::path::Path;

pub struct Session {
    pub(crate) dnnl: Dnnl,
    pub(crate) engine: Handle,
    pub(crate) stream: Handle,
    /// `OMP_NUM_THREADS` and `OMP_PROC_BIND` when the session opened (OpenMP's start).
    openmp: (Option<String>, Option<String>),
    /// The count [`Session::set_threads`] set last, which the record reports instead.
    threads_set: Cell<Option<u64>>,
}

impl Session {
    pub fn open(lib: Option<&Path>) -> Result<Session, ReplayError> {
        let dnnl = Dnnl::load(lib)?;
        let mut engine: Handle = std::ptr::null_mut();
        let mut stream: Handle = std::ptr::null_mut();
        let library = || dnnl.api.path.clone();
        // SAFETY: plain constructor calls with live out-pointers: the first CPU engine, an
        // in-order stream on it.
        unsafe {
            let status = (dnnl.api.dnnl_engine_create)(&mut engine, api::ENGINE_KIND_CPU, 0);
            if status != api::status::SUCCESS {
                return Err(ReplayError::NoEngine {
                    library: library(),
                    status,
                });
            }
            let status = (dnnl.api.dnnl_stream_create)(&mut stream, engine, api::STREAM_IN_ORDER);
            if status != api::status::SUCCESS {
                return Err(ReplayError::NoStream {
                    library: library(),
                    status,
                });
            }
        }
        Ok(Session {
            dnnl,
            engine,
            stream,
            openmp: crate::env::openmp(),
            threads_set: Cell::new(None),
        })
    }

    /// The loaded library's path.
    pub fn library(&self) -> &Path {
        &self.dnnl.api.path
    }

    /// The loaded library's version (`3.2.0`).
    pub fn version(&self) -> &str {
        &self.dnnl.version
    }

    /// Whether this oneDNN runs its CPU engine on the SYCL CPU device, whose thread count
    /// neither OMP_NUM_THREADS nor [`Session::set_threads`] sets (it uses every core).
    pub fn is_sycl(&self) -> bool {
        self.dnnl.cpu_runtime == api::RUNTIME_SYCL
    }

    /// Sets the thread count of the primitives created from now on (through the loaded OpenMP
    /// runtime: `omp_set_num_threads`); the replay record reports it.
    pub fn set_threads(&self, threads: u64) -> Result<(), String> {
        crate::threads::set(&self.dnnl, threads)?;
        self.threads_set.set(Some(threads));
        Ok(())
    }

    /// The thread count primitives are created at now, if the runtime says (OpenMP).
    pub fn threads(&self) -> Option<u64> {
        crate::threads::get(&self.dnnl)
    }

    /// The thread count as the replay record states it: the one set, else `OMP_NUM_THREADS`.
    pub(crate) fn recorded_threads(&self) -> Option<String> {
        match self.threads_set.get() {
            Some(n) => Some(n.to_string()),
            None => self.openmp.0.clone(),
        }
    }

    /// `OMP_PROC_BIND` when the session opened.
    pub(crate) fn binding(&self) -> Option<String> {
        self.openmp.1.clone()
    }

    /// Rebuilds and times one primitive.
    pub fn replay(&self, p: &Primitive, t: &Timing) -> Result<Measurement, SkipReason> {
        self.replay_with(p, t, &ChosenLayouts::none(&self.dnnl), &Quiet)
    }

    /// Rebuilds and times one primitive, taking the tags this library cannot name from
    /// `layouts` (the layouts other primitives of its log chose); stops timing early when
    /// `progress` says stop.
    pub(crate) fn replay_with(
        &self,
        p: &Primitive,
        t: &Timing,
        layouts: &ChosenLayouts,
        progress: &dyn Progress,
    ) -> Result<Measurement, SkipReason> {
        let b = crate::build::build(&self.dnnl, self.engine, p, layouts)?;
        run::measure(&self.dnnl, self.engine, self.stream, &b, t, progress)
    }
}

/// For tests: a session on `$PROFILEDNN_DNNL_LIB`; `None` (the test says SKIPPED) without
/// one, unless PROFILEDNN_REQUIRE_ONEDNN is set (then a missing library fails the test).
#[cfg(test)]
pub(crate) fn session_or_skip() -> Option<Session> {
    let lib = crate::env::dnnl_lib()
        .map(std::path::PathBuf::from)
        .filter(|p| p.exists());
    let Some(lib) = lib else {
        assert!(
            std::env::var_os("PROFILEDNN_REQUIRE_ONEDNN").is_none(),
            "PROFILEDNN_REQUIRE_ONEDNN is set but PROFILEDNN_DNNL_LIB names no library"
        );
        eprintln!("SKIPPED: set PROFILEDNN_DNNL_LIB to a libdnnl.so.3 to run this test");
        return None;
    };
    Some(Session::open(Some(&lib)).unwrap())
}
