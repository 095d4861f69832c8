//! Native replay: each unique primitive of a log re-created and timed through oneDNN's C API.

pub mod allocation;
pub mod api;
pub mod build;
pub mod chosen_layouts;
mod error;
mod fresh;
pub mod heap_choice;
mod kinds;
pub mod rank;
pub mod run;
pub mod sequence;
mod skip;
pub mod stability;
pub mod threads;
mod weights_layout;

pub use error::ReplayError;
pub use skip::{SkipReason, Status};

use api::{Dnnl, Handle};
use chosen_layouts::ChosenLayouts;
use profilednn_analysis::{EventKind, Profile};
use profilednn_model::Primitive;
use run::{Measurement, Timing};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const SCHEMA: &str = "profilednn.replay.v1";

/// One unique problem of the log (implementations merged) and its replay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayResult {
    /// The identity used to match logs and results: the benchdnn line of the problem.
    pub key: String,
    pub prim_kind: String,
    pub prop_kind: String,
    pub shapes: String,
    pub calls: u64,
    pub log_time_ms: f64,
    pub log_implementations: Vec<String>,
    pub measurement: Option<Measurement>,
    /// The implementation picked here is one the log used.
    pub implementation_matches: Option<bool>,
    /// Why the primitive was not replayed (its message in the JSON).
    pub skipped: Option<SkipReason>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Replay {
    pub schema: String,
    pub source: String,
    pub onednn: String,
    pub library: String,
    /// The instruction set oneDNN dispatched to (`avx2`, `avx512_core_amx`, …): what decides
    /// which implementations, and whether bf16 ones, exist here. Null in files of earlier
    /// versions.
    #[serde(default)]
    pub onednn_isa: Option<String>,
    pub cpu: Option<String>,
    pub threads: Option<String>,
    pub binding: Option<String>,
    /// `sequence` (a steady-state iteration re-run in log order, the default) or `isolated`
    /// (each problem in its own loop, benchdnn's view). Files without it are isolated.
    #[serde(default = "isolated")]
    pub mode: String,
    /// What the sequence replay ran, in `sequence` mode.
    #[serde(default)]
    pub sequence: Option<sequence::SequenceSummary>,
    /// The what-if the iteration was rewritten with (`replay --as/--layout/--batch`); the
    /// results are then the rewritten iteration's problems, `calls` per iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<profilednn_whatif::Record>,
    pub results: Vec<ReplayResult>,
}

fn isolated() -> String {
    "isolated".into()
}

impl Replay {
    /// Calls of the problems oneDNN has no bf16 implementation of on the replaying CPU
    /// ([`SkipReason::cpu_lacks_bf16`]): per iteration in a what-if, over the log otherwise.
    pub fn unavailable_here_calls(&self) -> u64 {
        self.results
            .iter()
            .filter(|r| r.skipped.as_ref().is_some_and(|s| s.cpu_lacks_bf16()))
            .map(|r| r.calls)
            .sum()
    }
}

/// One problem of a log: entries that differ only in implementation merged.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Identity shared by logs and results: the benchdnn line of the problem.
    pub key: String,
    pub primitive: Arc<Primitive>,
    pub calls: u64,
    pub time_ms: f64,
    /// Steady-state time: each entry's slowest call (the cold start: first touch of memory,
    /// JIT, thread-pool start) replaced by the mean of its other calls.
    pub steady_ms: f64,
    pub implementations: Vec<String>,
}

use profilednn_benchdnn::problem_key;

/// The problems of a profile, heaviest first.
pub fn problems(p: &Profile) -> Vec<Problem> {
    let mut m: BTreeMap<String, Problem> = BTreeMap::new();
    for e in p.entries.iter().filter(|e| e.event == EventKind::Exec) {
        let key = problem_key(&e.primitive);
        let x = m.entry(key.clone()).or_insert_with(|| Problem {
            key,
            primitive: e.primitive.clone(),
            calls: 0,
            time_ms: 0.0,
            steady_ms: 0.0,
            implementations: Vec::new(),
        });
        x.calls += e.calls;
        x.time_ms += e.time_ms();
        let timed = e.calls - e.untimed_calls;
        x.steady_ms += if timed > 1 {
            (e.time_ms() - e.max_ps as f64 / 1e9) * timed as f64 / (timed - 1) as f64
        } else {
            e.time_ms()
        };
        if !x.implementations.contains(&e.primitive.implementation) {
            x.implementations.push(e.primitive.implementation.clone());
        }
    }
    let mut v: Vec<Problem> = m.into_values().collect();
    v.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    v
}

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
