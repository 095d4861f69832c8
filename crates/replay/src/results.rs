//! The replay results format (`profilednn.replay.v2`): what `profilednn replay` writes and
//! `project`, `advise --replay` and `plan` read, apart from the code that produces it.

use crate::sequence::SequenceSummary;
use crate::skip::SkipReason;
use profilednn_analysis::{EventKind, Profile};
use profilednn_benchdnn::problem_key;
use profilednn_model::Primitive;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

pub const SCHEMA: &str = "profilednn.replay.v2";
/// The schema before skip reasons had a kind (a bare message each) and before the schema said
/// its version changed: read, and migrated ([`Replay::migrate`]).
pub const SCHEMA_V1: &str = "profilednn.replay.v1";

/// How the problems were replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A steady-state iteration re-run in log order (the default of `replay`).
    Sequence,
    /// Each problem in its own loop, benchdnn's view; files without a mode were.
    #[default]
    Isolated,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Sequence => "sequence",
            Mode::Isolated => "isolated",
        }
    }
}

/// Why a results file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplayFileError {
    #[error("not JSON of a `profilednn replay` result ({SCHEMA}): {0}")]
    Json(#[from] serde_json::Error),
    #[error("schema '{0}' is neither {SCHEMA} nor {SCHEMA_V1}: a file of a newer profilednn? Replay the log again with this one")]
    Schema(String),
}

/// One unique problem of the log (implementations merged) and its replay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplayResult {
    /// The identity used to match logs and results: the benchdnn line of the problem.
    pub key: String,
    pub prim_kind: profilednn_model::PrimitiveKind,
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
    #[serde(default)]
    pub mode: Mode,
    /// What the sequence replay ran, in `sequence` mode.
    #[serde(default)]
    pub sequence: Option<SequenceSummary>,
    /// The what-if the iteration was rewritten with (`replay --as/--layout/--batch`); the
    /// results are then the rewritten iteration's problems, `calls` per iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<profilednn_whatif::Record>,
    pub results: Vec<ReplayResult>,
    /// The framework ops of one steady iteration replayed through PyTorch (`replay
    /// --torch-trace`): the whole step, not only oneDNN's part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<crate::framework::FrameworkReplay>,
}

impl Replay {
    /// Reads a results file's text: v2 as is, v1 migrated (its skip reasons' kinds recovered
    /// from their messages while parsing, its schema raised).
    pub fn from_json(text: &str) -> Result<Replay, ReplayFileError> {
        let r: Replay = serde_json::from_str(text)?;
        r.migrate()
    }

    /// The replay in the current schema; an unknown schema is an error.
    pub fn migrate(mut self) -> Result<Replay, ReplayFileError> {
        match self.schema.as_str() {
            SCHEMA => Ok(self),
            SCHEMA_V1 => {
                self.schema = SCHEMA.into();
                Ok(self)
            }
            other => Err(ReplayFileError::Schema(other.into())),
        }
    }

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

/// The keys of `p`'s problems.
pub fn problem_keys(p: &Profile) -> HashSet<String> {
    problems(p).into_iter().map(|x| x.key).collect()
}

/// Keeps the entries of `p`'s `n` heaviest problems only (`replay --top`).
pub fn keep_heaviest(p: &mut Profile, n: usize) {
    let keep: HashSet<String> = problems(p).into_iter().take(n).map(|x| x.key).collect();
    p.entries
        .retain(|e| keep.contains(problem_key(&e.primitive).as_str()));
}

/// One problem's replay here: the implementation oneDNN picked and the times of its runs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Measurement {
    /// The implementation oneDNN picked here.
    pub implementation: String,
    pub runs: u32,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub p10_ms: f64,
    pub p90_ms: f64,
}
