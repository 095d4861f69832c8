//! PyTorch's profiler trace, read, and its views: the framework ops by phase, module and
//! iteration, their own roofline, the whole step, and the units a step replay runs; joined with
//! oneDNN's verbose log, which framework op produced each primitive and how much of each op's
//! time is spent outside oneDNN.
//!
//! The trace (Chrome JSON from `torch.profiler`, gzip or not) is read incrementally: one event
//! object at a time, so a multi-GB trace is never parsed as a whole; only operator intervals
//! are kept. Times are joined on the epoch clock: the trace's `baseTimeNanoseconds` plus each
//! event's `ts` (µs), and oneDNN's timestamps (ms since the epoch, `ONEDNN_VERBOSE_TIMESTAMP=1`).
//!
//! A crate of its own, below `profilednn-analysis`: the trace is a second input beside the
//! log, and reading it needs nothing of the log's profiles. The join takes the log's
//! executions from its caller ([`join()`], [`LogEvent`]); `profilednn_analysis::torch_join`
//! feeds it a log.

#![forbid(unsafe_code)]

pub mod compiled;
pub mod framework;
pub mod inductor_code;
pub mod recorded_python;
pub mod recording;
pub mod runs_in;
pub mod same_run;
mod scan;
pub mod step_batch;
pub mod step_params;
pub mod step_units;
pub mod whole_step;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Op {
    pub name: String,
    /// µs since the trace's base time (`baseTimeNanoseconds`).
    pub start: f64,
    pub end: f64,
    pub tid: i64,
    /// A `record_function` annotation (user_annotation), not an operator.
    pub annotation: bool,
    /// A Python function event (`nn.Module: Conv2d_3`, …), not an operator.
    pub python: bool,
    /// autograd's sequence number: a forward op and the backward node it created share it
    /// (how backward time finds the nn.Module of its forward op).
    pub seq: Option<i64>,
    /// `Input Dims` (`record_shapes`): one shape per argument, empty for a scalar, a list or an
    /// absent argument; no entries in a trace recorded without shapes.
    pub dims: Vec<Vec<i64>>,
    /// `Input type`, one per argument (`float`, `c10::BFloat16`, `Scalar`, …).
    pub types: Vec<String>,
    /// A tensor list argument's shapes (`_foreach_*`, `_fused_adamw_`), one entry per argument
    /// (empty for the others); no entries when the op has no tensor list.
    pub lists: Vec<Vec<Vec<i64>>>,
    /// `Concrete Inputs` (a scalar argument's value, `""` for a tensor), kept only for the ops
    /// whose cost depends on one (attention's `is_causal`, a convolution's stride and padding, a
    /// fused optimizer's hyper-parameters): for every op they would cost a trace of millions of
    /// events its memory for nothing.
    pub concrete: Vec<String>,
}

#[cfg(test)]
impl Op {
    /// A cpu op of thread 1 from `start` to `end` (µs), with no argument: the unit tests' op.
    pub(crate) fn cpu(name: &str, start: f64, end: f64) -> Op {
        Op {
            name: name.into(),
            start,
            end,
            tid: 1,
            annotation: false,
            python: false,
            seq: None,
            dims: Vec::new(),
            types: Vec::new(),
            lists: Vec::new(),
            concrete: Vec::new(),
        }
    }
}

#[derive(Debug, Default)]
pub struct TorchTrace {
    pub ops: Vec<Op>,
    pub base_ns: Option<f64>,
    /// The frames torch.compile compiled, by compile id (`0/0` → `GPT.forward
    /// (train.py:88)`), as `profilednn.profile` wrote them into the trace; each `Torch-Compiled
    /// Region: ID` op is named after its frame on reading.
    pub compiled_frames: BTreeMap<String, String>,
    /// Where the trace's JSON ended early (bytes read), when it did: the events read are
    /// kept, and the report says the rest is missing.
    pub truncated_at: Option<u64>,
    /// Why reading stopped there when the stream failed (a `.gz` cut short), not the JSON.
    pub stopped_by: Option<String>,
    /// Inductor's output code kept beside the trace ([`inductor_code::code_path`]): what costs
    /// the compiled kernels. None: there is none (an eager run, or an older recording).
    pub inductor_code: Option<inductor_code::OutputCode>,
    /// Dynamo's graph breaks (`count=reason`) and recompilations (`id=reason`), as
    /// `profilednn.profile` wrote them: [`compiled::dynamo`] reads them.
    pub graph_breaks: Vec<(String, String)>,
    pub recompiles: Vec<(String, String)>,
}

/// The compiled region's name with the frame it runs: `Torch-Compiled Region: 0/0` →
/// `Torch-Compiled Region: 0/0 GPT.forward (train.py:88)`.
fn with_frame(name: &mut String, frames: &BTreeMap<String, String>) {
    if let Some(what) = name
        .strip_prefix("Torch-Compiled Region: ")
        .and_then(|id| frames.get(id.trim()))
    {
        name.push(' ');
        name.push_str(what);
    }
}

/// A trace event's fields; `A` is what a reader keeps of its `args`.
#[derive(Deserialize)]
struct RawEvent<A = RawArgs> {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    ts: Option<f64>,
    dur: Option<f64>,
    tid: Option<serde_json::Value>,
    args: Option<A>,
}

#[derive(Deserialize)]
struct RawArgs {
    #[serde(rename = "Sequence number")]
    seq: Option<i64>,
    #[serde(rename = "Input Dims")]
    dims: Option<Vec<serde_json::Value>>,
    #[serde(rename = "Input type")]
    types: Option<Vec<serde_json::Value>>,
    #[serde(rename = "Concrete Inputs")]
    concrete: Option<Vec<serde_json::Value>>,
}

/// An `Input Dims` entry as a shape: a list of integers, else (a tensor list's nested lists, a
/// scalar, anything odd) no shape. Lenient: one odd argument costs its op, not the trace.
fn shape(v: &serde_json::Value) -> Vec<i64> {
    let Some(a) = v.as_array() else {
        return Vec::new();
    };
    a.iter()
        .map(|x| x.as_i64())
        .collect::<Option<Vec<i64>>>()
        .unwrap_or_default()
}

/// The ops whose cost reads a `Concrete Inputs` value (the cost model says which).
fn keeps_concrete(name: &str) -> bool {
    profilednn_cost::framework::reads_concrete(name)
}

/// Whether an `Input Dims` entry is a tensor list's shapes (a list of lists).
fn is_list_of_shapes(v: &serde_json::Value) -> bool {
    v.as_array()
        .is_some_and(|a| a.first().is_some_and(serde_json::Value::is_array))
}

/// An `Input Dims` entry as a tensor list's shapes (a list of integer lists), else none.
fn shape_list(v: &serde_json::Value) -> Vec<Vec<i64>> {
    let Some(a) = v.as_array().filter(|a| a.iter().all(|x| x.is_array())) else {
        return Vec::new();
    };
    a.iter().map(shape).collect()
}

/// Why a PyTorch profiler trace could not be read. Each message names the file and says what
/// to do next; the OS error is part of the message (not a `source`, so that error chains do
/// not print it twice).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(
        "{}: cannot open the PyTorch trace: {error}. `profilednn record --torch` writes it next \
         to the log (LOG stem + `.trace.json`) when the script uses `profilednn.profile()`",
        path.display()
    )]
    Open {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{name}: cannot read the PyTorch trace: {error}. Check that the file is a whole trace \
         (`profilednn record --torch` writes it)"
    )]
    Read { name: String, error: std::io::Error },
    /// Another kind of file (empty, the oneDNN log itself, JSON without `traceEvents`) given
    /// as the trace: it would join to empty tables.
    #[error("{0}")]
    NotATrace(String),
}

/// Reads a Chrome trace incrementally (a small state machine finds each object of
/// `traceEvents`; each is parsed on its own). Gzip is recognised by content, as for logs.
pub fn read_trace(path: &Path) -> Result<TorchTrace, TraceError> {
    use profilednn_verbose::FileKind;
    // The log itself, or an empty file, is refused from its first bytes.
    let refusal = FileKind::of_file(path)
        .ok()
        .and_then(|k| k.refusal(path, FileKind::TorchTrace));
    if let Some(m) = refusal {
        return Err(TraceError::NotATrace(m));
    }
    let file = std::fs::File::open(path).map_err(|error| TraceError::Open {
        path: path.into(),
        error,
    })?;
    let mut t = read_trace_from(
        profilednn_verbose::gzip::decompressed(file),
        &path.display().to_string(),
    )?;
    t.inductor_code = read_code(path);
    Ok(t)
}

/// The output code beside `trace`, parsed, when there is one. Bytes that are not UTF-8 are
/// replaced and a file cut short parses to what it holds: the kernels it lacks stay uncosted.
fn read_code(trace: &Path) -> Option<inductor_code::OutputCode> {
    let file = std::fs::File::open(inductor_code::code_path(trace)).ok()?;
    let mut bytes = Vec::new();
    let _ = profilednn_verbose::gzip::decompressed(file).read_to_end(&mut bytes);
    Some(inductor_code::parse(&String::from_utf8_lossy(&bytes)))
}

/// `read_trace` over any byte stream (uncompressed JSON); `name` is used in errors.
pub fn read_trace_from(reader: impl Read, name: &str) -> Result<TorchTrace, TraceError> {
    let mut t = TorchTrace::default();
    let top = scan::events(reader, name, |obj| {
        if let Some(op) = op_of(obj) {
            t.ops.push(op);
        }
    })?;
    if !top.has_events {
        return Err(TraceError::NotATrace(format!(
            "{name}: this is not a PyTorch profiler trace: it holds no `traceEvents` array; \
             expected {}",
            profilednn_verbose::FileKind::TorchTrace.expected()
        )));
    }
    t.base_ns = top.base_ns;
    t.truncated_at = top.truncated_at;
    t.stopped_by = top.stopped_by;
    // Lenient: an entry without `=` is skipped, not the trace.
    let pairs = |v: &Option<String>| -> Vec<(String, String)> {
        v.iter()
            .flat_map(|s| s.split(';'))
            .filter_map(|e| e.split_once('='))
            .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
            .collect()
    };
    t.graph_breaks = pairs(&top.graph_breaks);
    t.recompiles = pairs(&top.recompiles);
    t.compiled_frames = pairs(&top.compiled_frames).into_iter().collect();
    if !t.compiled_frames.is_empty() {
        for op in &mut t.ops {
            with_frame(&mut op.name, &t.compiled_frames);
        }
    }
    // Event times stay relative to the base (full precision for durations); primitives are
    // brought onto this clock instead (see `join`).
    t.ops
        .sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
    Ok(t)
}

/// The operator (or annotation, or Python function) an event object is, if it is one.
fn op_of(obj: &[u8]) -> Option<Op> {
    let e = serde_json::from_slice::<RawEvent>(obj).ok()?;
    let cat = e.cat.as_deref().unwrap_or("");
    if e.ph.as_deref() != Some("X")
        || !matches!(cat, "cpu_op" | "user_annotation" | "python_function")
    {
        return None;
    }
    let ts = e.ts.unwrap_or(0.0);
    let name = e.name.unwrap_or_default();
    let (seq, dims, types, mut lists, concrete) = match e.args {
        Some(a) => (
            a.seq,
            a.dims.iter().flatten().map(shape).collect(),
            a.types
                .iter()
                .flatten()
                .map(|t| t.as_str().unwrap_or("").to_string())
                .collect(),
            // Only an op with a tensor list argument keeps a list per argument (an allocation
            // per event otherwise, on traces of millions of events).
            if a.dims.iter().flatten().any(is_list_of_shapes) {
                a.dims.iter().flatten().map(shape_list).collect::<Vec<_>>()
            } else {
                Vec::new()
            },
            if keeps_concrete(&name) {
                a.concrete
                    .iter()
                    .flatten()
                    .map(|c| c.as_str().unwrap_or("").to_string())
                    .collect()
            } else {
                Vec::new()
            },
        ),
        None => (None, Vec::new(), Vec::new(), Vec::new(), Vec::new()),
    };
    if lists.iter().all(Vec::is_empty) {
        lists = Vec::new();
    }
    Some(Op {
        name,
        start: ts,
        // A negative duration (a broken writer) is an instant, not an op that ends before it
        // starts (which the nesting walks would misread).
        end: ts + e.dur.unwrap_or(0.0).max(0.0),
        tid: e.tid.as_ref().and_then(|v| v.as_i64()).unwrap_or(0),
        annotation: cat == "user_annotation",
        python: cat == "python_function",
        seq,
        dims,
        types,
        lists,
        concrete,
    })
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct OpRow {
    pub name: String,
    /// The op's phase (op rows); none for a phase's own row and an issuing op's.
    #[serde(serialize_with = "phase_or_empty")]
    pub phase: Option<Phase>,
    pub calls: u64,
    pub time_ms: f64,
    pub onednn_ms: f64,
    pub outside_ms: f64,
    pub primitives: u64,
}

impl OpRow {
    fn new(name: &str, phase: Option<Phase>) -> OpRow {
        OpRow {
            name: name.to_string(),
            phase,
            ..Default::default()
        }
    }

    /// One more call of `time_ms` that issued `primitives` taking `onednn_ms`.
    fn add(&mut self, time_ms: f64, onednn_ms: f64, primitives: u64) {
        self.calls += 1;
        self.time_ms += time_ms;
        self.onednn_ms += onednn_ms;
        self.primitives += primitives;
    }

    fn with_outside(mut self) -> OpRow {
        self.outside_ms = (self.time_ms - self.onednn_ms).max(0.0);
        self
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TorchJoin {
    pub trace_ops: usize,
    /// Python function events (`python_function`): the run was profiled with Python stacks,
    /// whose overhead slows its profiled step (an eager run against a compiled one recorded
    /// without them is not like with like).
    #[serde(skip)]
    pub python_events: usize,
    /// `Torch-Compiled Region` ops: the run called a torch.compile'd function (with or without
    /// Inductor's kernel names or a compiling iteration in the trace).
    #[serde(skip)]
    pub compiled_regions: usize,
    pub attributed_calls: u64,
    pub attributed_ms: f64,
    pub unattributed_calls: u64,
    pub unattributed_ms: f64,
    /// Top-level framework ops, most time outside oneDNN first.
    pub ops: Vec<OpRow>,
    /// The innermost op around each primitive (which ATen op issued it).
    pub issuing_ops: Vec<OpRow>,
    /// forward, loss, backward, optimizer, data.
    pub phases: Vec<OpRow>,
    /// (primitive kind, innermost op) → executions: which op issued which kind.
    pub issued: Vec<(String, String, u64)>,
    /// nn.Module forwards by time, named as `profilednn.profile(model=…)` marked them
    /// (`blocks.layers.2.self_attn`), else as torch names them (`Linear_8`, with Python stacks):
    /// time includes child modules, oneDNN time counts every primitive inside.
    pub modules: Vec<OpRow>,
    /// The same modules' backward: the autograd nodes their forward ops created (matched by
    /// sequence number), time and oneDNN time of those nodes, child modules included.
    pub module_backward: Vec<OpRow>,
    /// Steady iterations the trace covers (its iteration ranges less those that compiled, else
    /// the log's count): the divisor of every per-iteration figure of the trace's ops, phases,
    /// modules and framework ops.
    pub iterations: Option<u64>,
    /// Iterations of the log (its `profilednn,iteration,N` markers), the divisor of log-only
    /// figures (unattributed primitives).
    pub log_iterations: Option<u64>,
    /// The trace and the log do not belong together, or cannot be joined: no timestamps in the
    /// log, no base time in the trace, clocks that do not overlap.
    pub warnings: Vec<String>,
    /// One row per iteration when the trace marks them (`profilednn.iteration#N` ranges of
    /// `profilednn.profile`): the iteration's wall time and its phases.
    pub per_iteration: Vec<IterationRow>,
    /// The framework ops costed from their recorded shapes: the work outside oneDNN too.
    pub framework: framework::FrameworkOps,
    /// The warm-up iteration [`join_steady`] left out of every per-iteration figure (it is in
    /// `compiling` with no compile time, so that every reader leaves it out alike).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<u64>,
    /// Iterations that compiled (`torch.compile`'s first call, a recompilation), with their
    /// compile time: left out of every per-iteration figure of ops, phases, modules and
    /// framework ops (their rows stay in `per_iteration`), unless every iteration compiled.
    pub compiling: Vec<compiled::Compiling>,
    /// What Dynamo did (frames, graph breaks, recompilations), for a compiled run recorded by
    /// `profilednn.profile`: [`compiled::dynamo`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dynamo: Option<compiled::Dynamo>,
    /// The whole step against the roofline, primitives and framework ops together (with a
    /// machine profile: [`whole_step::whole_step`]).
    pub whole_step: Option<whole_step::WholeStep>,
    /// The steady step by where it runs (oneDNN, BLAS, ATen, inductor, other ops,
    /// Python/dispatch), per iteration: [`runs_in::classes`].
    pub runs_in: Vec<runs_in::RunsIn>,
    /// The log's executions' span on the epoch clock (ms), when they carry timestamps: what
    /// [`TorchJoin::of_this_run`] compares the trace's clock with.
    #[serde(skip)]
    pub log_span_ms: Option<(f64, f64)>,
}

impl TorchJoin {
    /// Sets the framework ops against the roofs the primitives were set against
    /// (`primitives`, scaled to the log's threads), else against `machine`'s own, and the
    /// whole step against both ([`whole_step::whole_step`]). Without either, nothing is set.
    pub fn set_roofs(
        &mut self,
        primitives: Option<&whole_step::Primitives>,
        machine: Option<&profilednn_machine::MachineProfile>,
    ) {
        let roofs = match (primitives, machine) {
            (Some(p), _) => p.roofs,
            (None, Some(m)) => framework::Roofs {
                machine: &m.name,
                peak_gflops: &m.peak_gflops,
                memory_gbps: m.memory_gbps,
                suspect: &[],
            },
            (None, None) => return,
        };
        self.framework.set_against(&roofs);
        self.whole_step = whole_step::whole_step(self, primitives);
    }

    /// Refuses a join of `trace` with a log of another run (their clocks do not overlap): see
    /// [`same_run`].
    pub fn of_this_run(
        &self,
        trace: &TorchTrace,
        trace_path: &Path,
        log_path: &Path,
    ) -> Result<(), same_run::AnotherRun> {
        same_run::check(trace, trace_path, log_path, self.log_span_ms)
    }

    /// Wall time of a steady iteration: the mean of the trace's iteration ranges that did not
    /// compile; `None` without iteration ranges.
    pub fn steady_step_ms(&self) -> Option<f64> {
        let walls: Vec<f64> = self
            .per_iteration
            .iter()
            .filter(|r| self.compiling.iter().all(|c| c.index != r.index))
            .map(|r| r.time_ms)
            .collect();
        (!walls.is_empty()).then(|| walls.iter().sum::<f64>() / walls.len() as f64)
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct IterationRow {
    pub index: u64,
    /// Wall time of the iteration's range in the trace.
    pub time_ms: f64,
    /// oneDNN time of the primitives issued by the iteration's ops.
    pub onednn_ms: f64,
    pub phases: Vec<OpRow>,
}

/// The name of the per-iteration ranges `profilednn.profile` records.
pub const ITERATION_RANGE: &str = "profilednn.iteration#";

/// The part of a training step a framework op belongs to; in JSON (and in the replay helper's
/// requests) by its name ([`Phase::as_str`]: `zero_grad`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Data,
    Forward,
    Loss,
    Backward,
    ZeroGrad,
    Optimizer,
}

impl Phase {
    /// Every phase in the order of a training step.
    pub const STEP_ORDER: [Phase; 6] = [
        Phase::Data,
        Phase::Forward,
        Phase::Loss,
        Phase::Backward,
        Phase::ZeroGrad,
        Phase::Optimizer,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Data => "data",
            Phase::Forward => "forward",
            Phase::Loss => "loss",
            Phase::Backward => "backward",
            Phase::ZeroGrad => "zero_grad",
            Phase::Optimizer => "optimizer",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An op row's phase in JSON: its name, `""` for a row of no phase (a phase's own row, an
/// issuing op), as the format has always had it.
pub fn phase_or_empty<S: serde::Serializer>(p: &Option<Phase>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.map_or("", Phase::as_str))
}

fn phase_of(name: &str, annotations: &[&str]) -> Phase {
    let phase = if annotations.iter().any(|a| a.starts_with("Optimizer.step")) {
        Phase::Optimizer
    } else if annotations
        .iter()
        .any(|a| a.starts_with("Optimizer.zero_grad"))
    {
        Phase::ZeroGrad
    } else if annotations
        .iter()
        .any(|a| *a == "data" || a.contains("DataLoader"))
    {
        Phase::Data
    } else if name.starts_with("autograd::engine::evaluate_function") {
        Phase::Backward
    } else if annotations.contains(&"loss") {
        Phase::Loss
    } else {
        Phase::Forward
    };
    phase
}

mod join;
mod module_names;

pub use join::{join, join_steady, Exec, LogEvent};
