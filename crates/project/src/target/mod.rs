//! `project LOG --to TARGET.json`: the training step of a log (and its PyTorch trace) on a
//! machine not at hand, described by its machine profile (measured there with `profilednn
//! peak`, or written from a spec sheet). Method and document: docs/machines.md.
//!
//! Why this method: the log's time is the best evidence of how the work runs; what changes on
//! another machine are the roofs. Each primitive keeps its efficiency against its roofs — the
//! roof of the unit its implementation names on the source, the unit oneDNN would pick on the
//! target — and moves with the ratio of its roofline times; framework ops likewise by their
//! cost-model bound; the rest of the step (uncosted ops, Python, dispatch) with single-thread
//! speed, for which the one-core f32 peak is the proxy.

pub mod band;
pub mod epoch;
mod framework;
mod notes;
mod onednn;
pub mod profile_file;
pub mod roofs;
pub mod source;
mod step;

pub use profile_file::{parse, TargetProfile, TargetProfileError};
pub use step::project_to;

use profilednn_analysis::Profile;
use profilednn_replay::logged::LoggedSteady;
use profilednn_torchtrace::TorchJoin;
use serde::Serialize;

/// What the projection reads: the log (and the steady medians a second pass gave), the trace
/// joined with it.
pub struct Input<'a> {
    pub profile: &'a Profile,
    pub logged: Option<&'a LoggedSteady>,
    pub join: Option<&'a TorchJoin>,
}

/// The JSON document's schema (docs/machines.md).
pub const SCHEMA: &str = "profilednn.machine-projection.v1";

/// One family of work (a primitive kind, a framework op family, the rest), per iteration.
#[derive(Debug, Clone, Serialize)]
pub struct Family {
    /// `oneDNN`, `BLAS`, `ATen` or `rest`.
    pub part: String,
    /// `convolution`, `matmul`, `reorder`, … for oneDNN; `gemm`, `attention`, … for framework
    /// ops; `python/dispatch and uncosted ops` for the rest.
    pub family: String,
    pub logged_ms: f64,
    pub projected_ms: f64,
    /// Logged time of the members that are memory-bound on the target (scaled by bandwidth).
    pub memory_bound_ms: f64,
    /// How it was scaled when not by its roofs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scaled_by: Option<String>,
}

impl Family {
    fn new(part: &str, family: &str) -> Family {
        Family {
            part: part.into(),
            family: family.into(),
            logged_ms: 0.0,
            projected_ms: 0.0,
            memory_bound_ms: 0.0,
            scaled_by: None,
        }
    }

    fn add(&mut self, logged: f64, projected: f64, memory: bool) {
        self.logged_ms += logged;
        self.projected_ms += projected;
        if memory {
            self.memory_bound_ms += logged;
        }
    }
}

/// A part of the step (oneDNN, framework ops, the rest) or a phase, per iteration.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub name: String,
    pub logged_ms: f64,
    pub projected_ms: f64,
}

/// The options of the projection.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Threads per rank on the target (`--threads`); default: the log's.
    pub threads: Option<usize>,
}

/// The source machine: its profile and where it came from.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    pub name: String,
    /// The file, or `the default machine profile (PATH)`.
    pub profile: String,
}

/// The projection onto one target.
#[derive(Debug, Clone, Serialize)]
pub struct TargetProjection {
    pub target: String,
    pub profile: String,
    /// `measured` (`profilednn peak`) or `spec_sheet`.
    pub profile_kind: &'static str,
    pub threads: usize,
    pub logged_step_ms: f64,
    pub projected_step_ms: f64,
    pub band: band::Band,
    /// Target step over logged step (above 1: slower there).
    pub ratio: f64,
    /// oneDNN, framework ops (with a trace), rest.
    pub parts: Vec<Part>,
    pub families: Vec<Family>,
    /// forward, loss, backward, optimizer… (with a trace).
    pub phases: Vec<Part>,
    /// Unit changes of compute-bound primitives (`bf16: avx512_bf16 → amx`) with logged ms.
    pub unit_changes: Vec<Part>,
    /// Precisions the target runs emulated through f32, with the fallback said.
    pub emulated: Vec<String>,
    pub assumptions: Vec<String>,
    pub not_modelled: Vec<String>,
    /// The epoch and its cost (`--samples-per-epoch`, `--batch`, `--price-per-hour`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<epoch::Epoch>,
}

/// The document `--format json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct MachineProjection {
    pub schema: &'static str,
    pub log: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    pub source: Source,
    /// Threads per rank of the log (`nthr`), when it says.
    pub log_threads: Option<usize>,
    /// Per iteration when the iteration count is known, else the whole log.
    pub per_iteration: bool,
    pub targets: Vec<TargetProjection>,
}
