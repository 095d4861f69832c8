//! PyTorch's profiler trace joined with oneDNN's verbose log: which framework op produced each
//! primitive, and how much of each op's time is spent outside oneDNN.
//!
//! The trace (Chrome JSON from `torch.profiler`, gzip or not) is read incrementally: one event
//! object at a time, so a multi-GB trace is never parsed as a whole; only operator intervals
//! are kept. Times are joined on the epoch clock: the trace's `baseTimeNanoseconds` plus each
//! event's `ts` (µs), and oneDNN's timestamps (ms since the epoch, `ONEDNN_VERBOSE_TIMESTAMP=1`).

pub mod compiled;
pub mod framework;
pub mod runs_in;
mod scan;
pub mod step_batch;
pub mod step_params;
pub mod step_units;
pub mod whole_step;

use crate::events::{for_each_event, Event};
use crate::EventKind;
use profilednn_verbose::LogInput;
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
    /// `Concrete Inputs` (a scalar argument's value, `""` for a tensor), kept for the attention
    /// ops only, whose cost depends on one (`is_causal`): for every op they would cost a trace of
    /// millions of events its memory for nothing.
    pub concrete: Vec<String>,
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
        "{name}: cannot read the PyTorch trace: {error}. Check that the file is whole (a trace \
         still being written, or a truncated .gz, cannot be joined)"
    )]
    Read { name: String, error: std::io::Error },
}

/// Reads a Chrome trace incrementally (a small state machine finds each object of
/// `traceEvents`; each is parsed on its own). Gzip is recognised by content, as for logs.
pub fn read_trace(path: &Path) -> Result<TorchTrace, TraceError> {
    let file = std::fs::File::open(path).map_err(|error| TraceError::Open {
        path: path.into(),
        error,
    })?;
    read_trace_from(
        profilednn_verbose::gzip::decompressed(file),
        &path.display().to_string(),
    )
}

/// `read_trace` over any byte stream (uncompressed JSON); `name` is used in errors.
pub fn read_trace_from(reader: impl Read, name: &str) -> Result<TorchTrace, TraceError> {
    let mut t = TorchTrace::default();
    let top = scan::events(reader, name, |obj| {
        if let Some(op) = op_of(obj) {
            t.ops.push(op);
        }
    })?;
    t.base_ns = top.base_ns;
    t.truncated_at = top.truncated_at;
    // Lenient: an entry without `=` is skipped, not the trace.
    t.compiled_frames = top
        .compiled_frames
        .iter()
        .flat_map(|s| s.split(';'))
        .filter_map(|e| e.split_once('='))
        .map(|(id, what)| (id.trim().to_string(), what.trim().to_string()))
        .collect();
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
            a.dims.iter().flatten().map(shape_list).collect::<Vec<_>>(),
            if name.contains("attention") {
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
    /// forward, loss, backward, optimizer, zero_grad, data (for op rows).
    pub phase: String,
    pub calls: u64,
    pub time_ms: f64,
    pub onednn_ms: f64,
    pub outside_ms: f64,
    pub primitives: u64,
}

impl OpRow {
    fn new(name: &str, phase: &str) -> OpRow {
        OpRow {
            name: name.to_string(),
            phase: phase.to_string(),
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
    /// Iterations that compiled (`torch.compile`'s first call, a recompilation), with their
    /// compile time: left out of every per-iteration figure of ops, phases, modules and
    /// framework ops (their rows stay in `per_iteration`), unless every iteration compiled.
    pub compiling: Vec<compiled::Compiling>,
    /// The whole step against the roofline, primitives and framework ops together (with a
    /// machine profile: [`whole_step::whole_step`]).
    pub whole_step: Option<whole_step::WholeStep>,
    /// The steady step by where it runs (oneDNN, BLAS, ATen, inductor, other ops,
    /// Python/dispatch), per iteration: [`runs_in::classes`].
    pub runs_in: Vec<runs_in::RunsIn>,
}

impl TorchJoin {
    /// Sets the framework ops against the roofs the primitives were set against
    /// (`primitives`, scaled to the log's threads), else against `machine`'s own, and the
    /// whole step against both ([`whole_step::whole_step`]). Without either, nothing is set.
    pub fn set_roofs(
        &mut self,
        primitives: Option<&crate::efficiency::Efficiency>,
        machine: Option<&profilednn_machine::MachineProfile>,
    ) {
        let (name, peaks, memory) = match (primitives, machine) {
            (Some(e), _) => (&e.machine, &e.peak_gflops, e.memory_gbps),
            (None, Some(m)) => (&m.name, &m.peak_gflops, m.memory_gbps),
            (None, None) => return,
        };
        self.framework.set_against(&framework::Roofs {
            machine: name,
            peak_gflops: peaks,
            memory_gbps: memory,
        });
        self.whole_step = whole_step::whole_step(self, primitives);
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

/// The part of a training step a framework op belongs to. Rows carry it as text
/// ([`Phase::as_str`], the names of the JSON output); the advice and the renderers name phases
/// through this enum, so that a phase cannot be misspelt in one crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

fn phase_of(name: &str, annotations: &[&str]) -> &'static str {
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
    phase.as_str()
}

mod module_names;

/// Joins `trace` with the primitives of the log at `log`.
pub fn join(trace: &TorchTrace, log: LogInput) -> TorchJoin {
    let ops = &trace.ops;
    let compiling = compiled::compiling_iterations(ops);
    // Top-level cpu ops (not inside another cpu op of the same thread), and the annotations
    // around each.
    let mut top: Vec<usize> = Vec::new();
    let mut stack: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    let mut parent_top: Vec<Option<usize>> = vec![None; ops.len()];
    for (i, op) in ops.iter().enumerate() {
        if op.annotation || op.python {
            continue;
        }
        let st = stack.entry(op.tid).or_default();
        while st.last().is_some_and(|&j| ops[j].end <= op.start) {
            st.pop();
        }
        if st.is_empty() {
            top.push(i);
            parent_top[i] = Some(i);
        } else {
            parent_top[i] = parent_top[st[0]];
        }
        st.push(i);
    }
    // The loop's iterations: the ranges that hold a top-level op of their thread (the range
    // `profilednn.profile` opens after the last step holds none). Every one of them compiling
    // (a recompile each step, a one-iteration trace) leaves no steady one: keep them all.
    let loop_iterations = ops
        .iter()
        .filter(|r| r.annotation && r.name.starts_with(ITERATION_RANGE))
        .filter(|r| {
            let from = top.partition_point(|&i| ops[i].start < r.start);
            top[from..]
                .iter()
                .take_while(|&&i| ops[i].start < r.end)
                .any(|&i| ops[i].tid == r.tid)
        })
        .count();
    let excluded: &[compiled::Compiling] = if compiling.len() < loop_iterations {
        &compiling
    } else {
        &[]
    };
    let steady = |t: f64| !compiled::within(excluded, t);
    let annotations: Vec<&Op> = ops.iter().filter(|o| o.annotation).collect();
    let around = |t: f64| -> Vec<&str> {
        annotations
            .iter()
            .filter(|a| a.start <= t && t < a.end)
            .map(|a| a.name.as_str())
            .collect()
    };
    // Innermost cpu op containing `t`: walk back over ops starting before t.
    let cpu: Vec<usize> = (0..ops.len())
        .filter(|&i| !ops[i].annotation && !ops[i].python)
        .collect();
    // nn.Module intervals (forward only: neither mark is recorded in backward).
    let modules: Vec<usize> = module_names::module_ops(ops);
    let mut module_dnn: BTreeMap<usize, (f64, u64)> = BTreeMap::new();
    let innermost = |t: f64| -> Option<usize> {
        let k = cpu.partition_point(|&i| ops[i].start <= t);
        cpu[..k]
            .iter()
            .rev()
            .take(20_000)
            .copied()
            .find(|&i| ops[i].end >= t)
    };
    let mut per_top: BTreeMap<usize, (f64, u64)> = BTreeMap::new();
    let mut issuing: BTreeMap<String, OpRow> = BTreeMap::new();
    let mut issued: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut j = TorchJoin {
        trace_ops: cpu.len(),
        ..Default::default()
    };
    // oneDNN time by the innermost op that issued it: where each framework op's work ran.
    let mut dnn_by_op: BTreeMap<usize, f64> = BTreeMap::new();
    let mut markers = 0u64;
    let base_us = trace.base_ns.unwrap_or(0.0) / 1e3;
    // The log's clock span (epoch ms) and how many executions carry a timestamp.
    let (mut execs, mut timestamped) = (0u64, 0u64);
    let mut log_span: Option<(f64, f64)> = None;
    for_each_event(log, |e| match e {
        Event::Iteration { .. } => markers += 1,
        Event::Primitive(p) if p.kind == EventKind::Exec => {
            let ms = p.time_ps.unwrap_or(0) as f64 / 1e9;
            execs += 1;
            if let Some(ts) = p.timestamp_ms {
                timestamped += 1;
                log_span =
                    Some(log_span.map_or((ts, ts + ms), |(a, b)| (a.min(ts), b.max(ts + ms))));
            }
            if let Some(ts) = p.timestamp_ms {
                // Every module around the primitive (a module's time includes its children's).
                let t = ts * 1e3 - base_us;
                let k = modules.partition_point(|&i| ops[i].start <= t);
                for &m in modules[..k].iter().rev().take(20_000) {
                    if ops[m].end >= t {
                        let x = module_dnn.entry(m).or_default();
                        x.0 += ms;
                        x.1 += 1;
                    }
                }
            }
            let hit = p.timestamp_ms.and_then(|ts| innermost(ts * 1e3 - base_us));
            match hit {
                Some(i) => {
                    j.attributed_calls += 1;
                    j.attributed_ms += ms;
                    *dnn_by_op.entry(i).or_default() += ms;
                    if let Some(t) = parent_top[i] {
                        let x = per_top.entry(t).or_default();
                        x.0 += ms;
                        x.1 += 1;
                    }
                    // The issuing ops and the reorders' causes are per (steady) iteration
                    // figures: not of an iteration that compiled.
                    if steady(ops[i].start) {
                        let r = issuing.entry(ops[i].name.clone()).or_insert_with(|| OpRow {
                            name: ops[i].name.clone(),
                            ..Default::default()
                        });
                        r.onednn_ms += ms;
                        r.primitives += 1;
                        *issued
                            .entry((p.primitive.kind.to_string(), ops[i].name.clone()))
                            .or_default() += 1;
                    }
                }
                None => {
                    j.unattributed_calls += 1;
                    j.unattributed_ms += ms;
                }
            }
        }
        _ => {}
    });
    j.framework = framework::framework_ops(trace, &dnn_by_op, &steady);
    // Each top-level op's phase, found once (the annotations around it decide).
    let top_phase: Vec<&'static str> = top
        .iter()
        .map(|&i| phase_of(&ops[i].name, &around(ops[i].start)))
        .collect();
    let mut rows: BTreeMap<String, OpRow> = BTreeMap::new();
    let mut phases: BTreeMap<&'static str, OpRow> = BTreeMap::new();
    for (&i, &ph) in top.iter().zip(&top_phase) {
        let op = &ops[i];
        if !steady(op.start) {
            continue;
        }
        let dur = (op.end - op.start) / 1e3;
        let (dnn, prims) = per_top.get(&i).copied().unwrap_or_default();
        rows.entry(format!("{ph}\t{}", op.name))
            .or_insert_with(|| OpRow::new(&op.name, ph))
            .add(dur, dnn, prims);
        phases
            .entry(ph)
            .or_insert_with(|| OpRow::new(ph, ""))
            .add(dur, dnn, prims);
    }
    j.per_iteration = per_iteration(ops, &top, &top_phase, &per_top);
    let steady_top: Vec<usize> = top
        .iter()
        .copied()
        .filter(|&i| steady(ops[i].start))
        .collect();
    j.module_backward = module_backward(ops, &steady_top, &per_top, &modules);
    let finish = |m: BTreeMap<String, OpRow>| {
        let mut v: Vec<OpRow> = m.into_values().map(OpRow::with_outside).collect();
        v.sort_by(|a, b| b.outside_ms.total_cmp(&a.outside_ms));
        v
    };
    j.ops = finish(rows);
    let mut iss: Vec<OpRow> = issuing.into_values().collect();
    iss.sort_by(|a, b| b.onednn_ms.total_cmp(&a.onednn_ms));
    j.issuing_ops = iss;
    j.issued = issued.into_iter().map(|((k, o), n)| (k, o, n)).collect();
    let mut mods: BTreeMap<String, OpRow> = BTreeMap::new();
    for &m in modules.iter().filter(|&&m| steady(ops[m].start)) {
        let name = module_names::module_name(&ops[m]);
        let (dnn, prims) = module_dnn.get(&m).copied().unwrap_or_default();
        mods.entry(name.to_string())
            .or_insert_with(|| OpRow::new(name, Phase::Forward.as_str()))
            .add((ops[m].end - ops[m].start) / 1e3, dnn, prims);
    }
    let mut mods: Vec<OpRow> = mods.into_values().map(OpRow::with_outside).collect();
    mods.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    j.modules = mods;
    j.phases = finish(
        phases
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    );
    j.log_iterations = (markers > 1).then(|| markers - 1);
    // The range opened by the last `step()` (closed when profiling stops) is not an iteration,
    // just as the log's trailing marker is not.
    if let Some(n) = j.log_iterations {
        j.per_iteration.retain(|r| r.index < n);
    }
    // Per-iteration figures of the trace divide by the iterations the trace covers: a trace
    // of 2 of the log's 5 iterations divided by 5 shows every op 2.5x too small.
    j.compiling = excluded
        .iter()
        .filter(|c| j.per_iteration.iter().any(|r| r.index == c.index))
        .cloned()
        .collect();
    j.iterations = if j.per_iteration.is_empty() {
        j.log_iterations
    } else {
        Some((j.per_iteration.len() - j.compiling.len()).max(1) as u64)
    };
    if !compiling.is_empty() && excluded.is_empty() {
        j.warnings.push(format!(
            "every one of the trace's {} iteration(s) compiled (torch.compile's first call, or \
             recompiling each step: look for guards that fail, e.g. with \
             TORCH_LOGS=recompiles): the PyTorch view's figures include the compilation; trace \
             more steps",
            compiling.len()
        ));
    } else if compiling.is_empty()
        && loop_iterations == 0
        && ops.iter().any(|o| compiled::is_compilation(&o.name))
    {
        j.warnings.push(
            "the trace holds torch.compile's compilation but no iteration ranges to set it \
             apart: its figures include the compilation; record with `profilednn.profile()` \
             (it marks each step)"
                .to_string(),
        );
    }
    let covered = if j.per_iteration.is_empty() {
        j.iterations
    } else {
        Some(j.per_iteration.len() as u64)
    };
    if let (Some(t), Some(l), Some(d)) = (covered, j.log_iterations, j.iterations) {
        if t != l {
            j.warnings.push(format!(
                "the trace covers {t} of the log's {l} iterations: the PyTorch view's \
                 per-iteration figures divide by {d}"
            ));
        }
    }
    if let Some(at) = trace.truncated_at {
        j.warnings.push(format!(
            "the trace ends inside its JSON after {at} bytes (a run stopped while writing it?): \
             its {} events before that point are read, the rest is missing; record the run \
             again and let it finish to have them all",
            trace.ops.len()
        ));
    }
    j.warnings
        .extend(clock_warnings(trace, execs, timestamped, log_span));
    j.runs_in = runs_in::classes(&j);
    j
}

/// Why the trace and the log cannot be joined, if they cannot: the log has no timestamps, the
/// trace has no base time, or their clocks do not overlap (another run).
fn clock_warnings(
    trace: &TorchTrace,
    execs: u64,
    timestamped: u64,
    log_span: Option<(f64, f64)>,
) -> Vec<String> {
    let mut w = Vec::new();
    if execs > 0 && timestamped == 0 {
        w.push(
            "the log has no timestamps (ONEDNN_VERBOSE_TIMESTAMP=1, as `profilednn record \
             --torch` sets): no primitive can be placed inside a framework op"
                .to_string(),
        );
    } else if execs > timestamped {
        w.push(format!(
            "{} of the log's {execs} executions have no timestamp and cannot be attributed",
            execs - timestamped
        ));
    }
    let Some(base_ns) = trace.base_ns else {
        if !trace.ops.is_empty() {
            w.push(
                "the trace has no baseTimeNanoseconds: its clock cannot be joined with the log's"
                    .to_string(),
            );
        }
        return w;
    };
    let start = trace
        .ops
        .iter()
        .map(|o| o.start)
        .fold(f64::INFINITY, f64::min);
    let end = trace
        .ops
        .iter()
        .map(|o| o.end)
        .fold(f64::NEG_INFINITY, f64::max);
    let (Some((a, b)), true) = (log_span, start <= end) else {
        return w;
    };
    let (ta, tb) = (base_ns / 1e6 + start / 1e3, base_ns / 1e6 + end / 1e3);
    if tb < a || b < ta {
        let gap_s = if tb < a { a - tb } else { ta - b } / 1e3;
        w.push(format!(
            "the trace and the log do not overlap in time (the trace {} the log by {gap_s:.1} s): \
             they are of different runs",
            if tb < a {
                "ends before"
            } else {
                "starts after"
            }
        ));
    }
    w
}

/// Rows per iteration range: the top-level ops (of the range's thread) that start inside it,
/// by phase. `top` is in start order, so each range is a binary search away.
fn per_iteration(
    ops: &[Op],
    top: &[usize],
    top_phase: &[&'static str],
    per_top: &BTreeMap<usize, (f64, u64)>,
) -> Vec<IterationRow> {
    let mut rows = Vec::new();
    for r in ops.iter().filter(|o| o.annotation) {
        let Some(index) = r
            .name
            .strip_prefix(ITERATION_RANGE)
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let from = top.partition_point(|&i| ops[i].start < r.start);
        let to = top.partition_point(|&i| ops[i].start < r.end);
        let mut phases: BTreeMap<&'static str, OpRow> = BTreeMap::new();
        let mut onednn = 0.0;
        for (&i, &ph) in top[from..to].iter().zip(&top_phase[from..to]) {
            let op = &ops[i];
            if op.tid != r.tid {
                continue;
            }
            let (dnn, prims) = per_top.get(&i).copied().unwrap_or_default();
            phases.entry(ph).or_insert_with(|| OpRow::new(ph, ph)).add(
                (op.end - op.start) / 1e3,
                dnn,
                prims,
            );
            onednn += dnn;
        }
        // The range after the last `step()` holds nothing of the loop: not an iteration.
        if phases.is_empty() {
            continue;
        }
        rows.push(IterationRow {
            index,
            time_ms: (r.end - r.start) / 1e3,
            onednn_ms: onednn,
            phases: phases.into_values().map(OpRow::with_outside).collect(),
        });
    }
    rows
}

/// Backward time per module: each top-level autograd node (`autograd::engine::
/// evaluate_function: …`) goes to every module around the forward op that has its sequence
/// number.
fn module_backward(
    ops: &[Op],
    top: &[usize],
    per_top: &BTreeMap<usize, (f64, u64)>,
    modules: &[usize],
) -> Vec<OpRow> {
    const NODE: &str = "autograd::engine::evaluate_function";
    // Sequence number → the modules around the first forward op that carries it.
    let mut owner: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for op in ops {
        let Some(seq) = op.seq else { continue };
        if op.annotation || op.python || op.name.starts_with(NODE) || owner.contains_key(&seq) {
            continue;
        }
        let k = modules.partition_point(|&m| ops[m].start <= op.start);
        let around: Vec<usize> = modules[..k]
            .iter()
            .rev()
            .take(20_000)
            .copied()
            .filter(|&m| ops[m].end >= op.end && ops[m].tid == op.tid)
            .collect();
        if !around.is_empty() {
            owner.insert(seq, around);
        }
    }
    let mut rows: BTreeMap<String, OpRow> = BTreeMap::new();
    for &i in top {
        let op = &ops[i];
        let (Some(seq), true) = (op.seq, op.name.starts_with(NODE)) else {
            continue;
        };
        let Some(mods) = owner.get(&seq) else {
            continue;
        };
        let (dnn, prims) = per_top.get(&i).copied().unwrap_or_default();
        for &m in mods {
            let name = module_names::module_name(&ops[m]);
            rows.entry(name.to_string())
                .or_insert_with(|| OpRow::new(name, Phase::Backward.as_str()))
                .add((op.end - op.start) / 1e3, dnn, prims);
        }
    }
    let mut v: Vec<OpRow> = rows.into_values().map(OpRow::with_outside).collect();
    v.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    v
}
