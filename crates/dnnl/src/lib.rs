//! Native replay: each unique primitive of a log re-created and timed through oneDNN's C API,
//! loaded at run time (`dlopen`). This is the only crate of the replay side with unsafe code.
//! Problems are identified by their benchdnn line (`profilednn-benchdnn`).

pub mod what_if_run;

pub mod allocation;
pub mod api;
pub mod build;

mod error;
mod fresh;
pub mod heap_choice;

pub mod rank;
pub mod run;
pub mod sequence;
pub mod status;
pub mod threads;
mod weights_layout;

pub use error::ReplayError;

use api::{Dnnl, Handle};
use build::chosen_layouts::ChosenLayouts;
use profilednn_analysis::Profile;
use profilednn_model::Primitive;
use profilednn_replay::{problems, Measurement, Problem, ReplayResult, SkipReason};
use run::Timing;

pub struct Session {
    pub dnnl: Dnnl,
    pub(crate) engine: Handle,
    pub(crate) stream: Handle,
}

impl Session {
    pub fn open(lib: Option<&std::path::Path>) -> Result<Session, ReplayError> {
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
        })
    }

    /// Rebuilds and times one primitive.
    pub fn replay(&self, p: &Primitive, t: &Timing) -> Result<Measurement, SkipReason> {
        self.replay_with(p, t, &ChosenLayouts::none(&self.dnnl))
    }

    /// Rebuilds and times one primitive, taking the tags this library cannot name from
    /// `layouts` (the layouts other primitives of its log chose).
    pub fn replay_with(
        &self,
        p: &Primitive,
        t: &Timing,
        layouts: &ChosenLayouts,
    ) -> Result<Measurement, SkipReason> {
        let b = build::build(&self.dnnl, self.engine, p, layouts)?;
        run::measure(&self.dnnl, self.engine, self.stream, &b, t)
    }
}

/// For tests: a session on `$PROFILEDNN_DNNL_LIB`; `None` (the test says SKIPPED) without
/// one, unless PROFILEDNN_REQUIRE_ONEDNN is set (then a missing library fails the test).
#[cfg(test)]
pub(crate) fn session_or_skip() -> Option<Session> {
    let lib = std::env::var_os("PROFILEDNN_DNNL_LIB")
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

/// Set (e.g. by a SIGINT handler: storing to an atomic is async-signal-safe) to stop a replay
/// as soon as the current run ends; the results measured so far are kept.
pub static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub(crate) fn stopped() -> bool {
    STOP.load(std::sync::atomic::Ordering::Relaxed)
}

/// Replays every problem of `profile`; `progress(i, n, what)` is called before each and returns
/// whether to go on: once it says no (Ctrl-C), the problems left are reported as not replayed
/// ([`SkipReason::Interrupted`]) and the results measured so far are kept.
pub fn replay_profile(
    s: &Session,
    profile: &Profile,
    t: &Timing,
    mut progress: impl FnMut(usize, usize, &str) -> bool,
) -> Vec<ReplayResult> {
    let probs = problems(profile);
    let n = probs.len();
    let layouts = ChosenLayouts::of(&s.dnnl, s.engine, probs.iter().map(|p| &*p.primitive));
    let mut going = true;
    probs
        .into_iter()
        .enumerate()
        .map(|(i, pr)| {
            let Problem {
                key,
                primitive: p,
                calls,
                time_ms: time,
                implementations: impls,
                ..
            } = pr;
            going = going && progress(i, n, &format!("{} {}", p.kind, p.problem)) && !stopped();
            let r = if going {
                s.replay_with(&p, t, &layouts)
            } else {
                Err(SkipReason::Interrupted)
            };
            let (measurement, skipped) = match r {
                Ok(m) => (Some(m), None),
                Err(e) => (None, Some(e)),
            };
            ReplayResult {
                implementation_matches: measurement
                    .as_ref()
                    .map(|m| impls.contains(&m.implementation)),
                key,
                prim_kind: p.kind.to_string(),
                prop_kind: p.prop_kind.to_string(),
                shapes: p.problem.clone(),
                calls,
                log_time_ms: time,
                log_implementations: impls,
                measurement,
                skipped,
            }
        })
        .collect()
}
