//! The framework ops of a step replayed through PyTorch (`replay LOG --torch-trace TRACE`): the
//! `framework` section of a replay file. It holds one steady iteration of the trace as its
//! units ran there and here, so that a projection of the whole step needs no trace.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a unit's time here was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitMethod {
    /// Re-issued through PyTorch with the recorded shapes, types and values, and timed.
    Torch,
    /// Not replayable (its reason is in `skipped`): its logged time is carried over.
    CarriedOver,
    /// Not in the trace: a call the what-if adds (the casts a bf16 autocast step has and an f32
    /// one lacks), timed through PyTorch like the others; its logged time is 0.
    Added,
}

/// The units of one op name in one phase: their calls, logged and replayed time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameworkOpResult {
    pub name: String,
    /// forward, loss, backward, optimizer, zero_grad, data.
    pub phase: profilednn_torchtrace::Phase,
    /// The cost model's family (`gemm`, `attention`, `convolution`, `normalization`, `elementwise`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    pub method: UnitMethod,
    /// Calls in the iteration.
    pub calls: u64,
    /// Their time in the trace's iteration.
    pub logged_ms: f64,
    /// Their time here (the sum of each call's median over the timed runs); the logged time
    /// for a unit carried over.
    pub replayed_ms: f64,
    /// Why the units were not replayed (the first reason seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Recorded with bf16 or f16 tensors, or casting its f32 ones to them inside (under
    /// autocast): a GEMM of these ran in oneDNN, not the BLAS; absent
    /// (false) in files of earlier versions, which then class every GEMM as the BLAS's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub low_precision: bool,
}

/// The whole-step replay of one steady iteration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameworkReplay {
    /// The trace the units were read from.
    pub trace: String,
    /// The iteration replayed (`profilednn.iteration#N`), and how many the trace holds.
    pub iteration: u64,
    pub iterations: usize,
    /// The iteration's wall time in the trace.
    pub logged_step_ms: f64,
    /// Its wall time outside the units (Python, the autograd engine's own work, ops that are
    /// not ATen's): carried over by the projection, unchanged.
    pub outside_units_ms: f64,
    /// The interpreter that ran the units, its PyTorch, and the thread count they ran at.
    pub python: String,
    pub torch: String,
    pub threads: u64,
    /// What the units were rewritten to (`bf16`: autocast's lower-precision ops in bf16), or
    /// none (as logged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    /// `channels-last` with `--layout channels-last`: the 4-D activations recorded contiguous
    /// were given in channels-last order; absent when as recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// With `--batch N`: the batch the step was recorded with (as read from its tensors) and N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<[u64; 2]>,
    /// Whether the units were timed under torch.profiler, as the trace was recorded: each op
    /// then pays the recording cost its nested ops paid in the logged step.
    pub under_profiler: bool,
    /// How each call's time was read: `profiler events` (the duration of the op's own event, as
    /// the trace's units were logged) or `wall clock` (around the Python call, when the events
    /// did not line up one per call, or without the profiler).
    pub timing: String,
    /// Helper processes run one after the other: each unit's time is its median over them.
    #[serde(default = "one")]
    pub processes: u32,
    /// The units ran with oneDNN's verbose mode on, as the log was recorded: each primitive
    /// they executed printed its line, as in the logged step.
    #[serde(default)]
    pub onednn_verbose: bool,
    /// Per op name and phase, most logged time first.
    pub ops: Vec<FrameworkOpResult>,
}

fn one() -> u32 {
    1
}

impl FrameworkReplay {
    /// Time of the units replayed through PyTorch, in the trace and here.
    pub fn replayed(&self) -> (f64, f64) {
        self.ops
            .iter()
            .filter(|o| o.method == UnitMethod::Torch)
            .fold((0.0, 0.0), |(l, r), o| (l + o.logged_ms, r + o.replayed_ms))
    }

    /// Logged time of the units carried over.
    pub fn carried_over_ms(&self) -> f64 {
        self.ops
            .iter()
            .filter(|o| o.method == UnitMethod::CarriedOver)
            .map(|o| o.logged_ms)
            .sum()
    }

    /// Calls the what-if added (autocast's casts) and their time here.
    pub fn added(&self) -> (u64, f64) {
        self.ops
            .iter()
            .filter(|o| o.method == UnitMethod::Added)
            .fold((0, 0.0), |(n, ms), o| (n + o.calls, ms + o.replayed_ms))
    }

    /// The step here: each replayed unit at its time here, the rest at its logged time.
    pub fn projected_step_ms(&self) -> f64 {
        self.outside_units_ms + self.ops.iter().map(|o| o.replayed_ms).sum::<f64>()
    }

    /// Logged and projected time by `key` (the phase or the family of each op row).
    pub fn by(&self, key: impl Fn(&FrameworkOpResult) -> String) -> BTreeMap<String, (f64, f64)> {
        let mut m: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for o in &self.ops {
            let e = m.entry(key(o)).or_default();
            e.0 += o.logged_ms;
            e.1 += o.replayed_ms;
        }
        m
    }
}
