//! One steady iteration of a traced training step, as the list of calls a replay through
//! PyTorch runs: its *units*, the outermost ATen ops of the iteration's thread in the order they
//! ran, each with the shapes, strides, types and scalar values the profiler recorded.
//!
//! Why the outermost ATen op: it is the smallest call that can be re-issued as is
//! (`torch.ops.aten.linear(x, w, b)` runs the `aten::addmm` inside it, with the same
//! dispatch), and no work counts twice. Autograd nodes (`AddmmBackward0`) and annotations
//! cannot be called, so the ATen ops inside them are the units. What is left of the step (the
//! Python between the ops, the autograd engine's own work, ops that are not ATen's) is not
//! replayed: the projection carries it over.

use super::{phase_of, scan, Phase, RawEvent, TorchTrace, TraceError, ITERATION_RANGE};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// One iteration range of the trace (a `profilednn.iteration#N` range of `profilednn.profile`).
#[derive(Debug, Clone, PartialEq)]
pub struct IterationRange {
    pub index: u64,
    pub tid: i64,
    /// The range's interval, in the trace's µs.
    pub start: f64,
    pub end: f64,
    pub wall_ms: f64,
    /// Iteration ranges that hold ops (the last `step()`'s empty range left out).
    pub iterations: usize,
    /// Of them, the ones counted as steady (the first left out when three or more).
    pub steady: usize,
}

/// The steady iteration a replay runs: of the iteration ranges that hold ops of their thread,
/// the first left out when there are three or more (a warm-up, or `torch.compile`'s
/// compilation), then the one of median wall time (the lower of the two middle ones).
/// `None` when the trace marks no iteration (recorded without `profilednn.profile`).
pub fn steady_iteration(trace: &TorchTrace) -> Option<IterationRange> {
    let ops = &trace.ops;
    let cpu_starts: Vec<(f64, i64)> = ops
        .iter()
        .filter(|o| !o.annotation && !o.python)
        .map(|o| (o.start, o.tid))
        .collect();
    let mut ranges: Vec<IterationRange> = ops
        .iter()
        .filter(|o| o.annotation)
        .filter_map(|o| {
            let index = o.name.strip_prefix(ITERATION_RANGE)?.parse().ok()?;
            let from = cpu_starts.partition_point(|&(s, _)| s < o.start);
            let to = cpu_starts.partition_point(|&(s, _)| s < o.end);
            cpu_starts[from..to]
                .iter()
                .any(|&(_, tid)| tid == o.tid)
                .then(|| IterationRange {
                    index,
                    tid: o.tid,
                    start: o.start,
                    end: o.end,
                    wall_ms: (o.end - o.start) / 1e3,
                    iterations: 0,
                    steady: 0,
                })
        })
        .collect();
    ranges.sort_by_key(|r| r.index);
    let n = ranges.len();
    let mut steady: Vec<IterationRange> = ranges.into_iter().skip(usize::from(n >= 3)).collect();
    steady.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms).then(a.index.cmp(&b.index)));
    let k = steady.len();
    let mut r = steady.get(k.checked_sub(1)? / 2)?.clone();
    r.iterations = n;
    r.steady = k;
    Some(r)
}

/// One call to replay: an outermost ATen op of the iteration, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Unit {
    pub name: String,
    /// forward, loss, backward, optimizer, zero_grad, data.
    pub phase: Phase,
    /// The cost model's family (`gemm`, `attention`, `convolution`, `normalization`, `elementwise`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Its duration in the trace.
    pub logged_ms: f64,
    /// The profiler's `Input Dims`, `Input type`, `Input Strides` and `Concrete Inputs`, one
    /// entry per argument, as recorded (a tensor list's dims are a list of shapes).
    pub dims: Vec<Value>,
    pub types: Vec<Value>,
    pub strides: Vec<Value>,
    pub concrete: Vec<Value>,
    /// The outermost op around the unit (itself when it is outermost): in the backward, the
    /// autograd node that ran it (`…: torch::autograd::AccumulateGrad` for a parameter's
    /// gradient). Not sent to the replay helper.
    #[serde(skip_serializing, default)]
    pub outermost: String,
    /// `bf16` (or `f16`) when the call cast its f32 arguments to that type inside (a nested
    /// `aten::copy_` from `float`): it ran under autocast, whose casts the recorded arguments
    /// do not show (an `aten::linear` of f32 weights that ran a bf16 GEMM in oneDNN). The
    /// replay runs such a call under autocast again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autocast: Option<String>,
}

/// The units of one iteration, and what the iteration holds besides them.
#[derive(Debug, Clone)]
pub struct StepUnits {
    pub iteration: IterationRange,
    pub units: Vec<Unit>,
}

impl StepUnits {
    /// The iteration's wall time outside its units: Python, the autograd engine's own work, ops
    /// that are not ATen's. A replay of the units carries it over.
    pub fn outside_units_ms(&self) -> f64 {
        (self.iteration.wall_ms - self.units.iter().map(|u| u.logged_ms).sum::<f64>()).max(0.0)
    }
}

/// An event of the iteration's thread and interval.
struct Event {
    name: String,
    start: f64,
    end: f64,
    annotation: bool,
    args: serde_json::Map<String, Value>,
}

/// Reads the trace at `path` again and keeps the events of `range` (its thread, its interval),
/// with their recorded arguments; the units are their outermost ATen ops.
pub fn step_units(path: &Path, range: &IterationRange) -> Result<StepUnits, TraceError> {
    let file = std::fs::File::open(path).map_err(|error| TraceError::Open {
        path: path.into(),
        error,
    })?;
    let mut events = Vec::new();
    scan::events(
        profilednn_verbose::gzip::decompressed(file),
        &path.display().to_string(),
        |obj| {
            if let Some(e) = event_of(obj, range) {
                events.push(e);
            }
        },
    )?;
    Ok(units_of(events, range))
}

fn event_of(obj: &[u8], range: &IterationRange) -> Option<Event> {
    let e = serde_json::from_slice::<RawEvent<serde_json::Map<String, Value>>>(obj).ok()?;
    let cat = e.cat.as_deref().unwrap_or("");
    let ts = e.ts?;
    let keep = e.ph.as_deref() == Some("X")
        && matches!(cat, "cpu_op" | "user_annotation")
        && e.tid.as_ref().and_then(Value::as_i64) == Some(range.tid)
        && range.start <= ts
        && ts < range.end;
    keep.then(|| Event {
        name: e.name.unwrap_or_default(),
        start: ts,
        end: ts + e.dur.unwrap_or(0.0),
        annotation: cat == "user_annotation",
        args: e.args.unwrap_or_default(),
    })
}

/// The lower precision a nested `aten::copy_` casts `float` to (`bf16`, `f16`), if it does.
fn cast_from_f32(e: &Event) -> Option<&'static str> {
    if e.name != "aten::copy_" {
        return None;
    }
    let types = e.args.get("Input type")?.as_array()?;
    if types.get(1)?.as_str()? != "float" {
        return None;
    }
    match types.first()?.as_str()? {
        "c10::BFloat16" => Some("bf16"),
        "c10::Half" => Some("f16"),
        _ => None,
    }
}

fn units_of(mut events: Vec<Event>, range: &IterationRange) -> StepUnits {
    events.sort_by(|a, b| a.start.total_cmp(&b.start).then(b.end.total_cmp(&a.end)));
    let annotations: Vec<(f64, f64, String)> = events
        .iter()
        .filter(|e| e.annotation && !e.name.starts_with(ITERATION_RANGE))
        .map(|e| (e.start, e.end, e.name.clone()))
        .collect();
    let mut units = Vec::new();
    // The enclosing cpu ops: (end, is a unit), and the outermost one's name (for the phase).
    let mut stack: Vec<(f64, bool)> = Vec::new();
    let mut top_name = String::new();
    for e in events.iter_mut().filter(|e| !e.annotation) {
        while stack.last().is_some_and(|&(end, _)| end <= e.start) {
            stack.pop();
        }
        if stack.is_empty() {
            top_name = e.name.clone();
        }
        let inside_unit = stack.iter().any(|&(_, unit)| unit);
        let unit = !inside_unit && e.name.starts_with("aten::");
        stack.push((e.end, unit));
        if inside_unit {
            // Only the ops autocast lowers (GEMMs, attention, convolutions): a cast inside
            // `aten::to` is the cast itself.
            if let (Some(to), Some(u)) = (cast_from_f32(e), units.last_mut()) {
                let u: &mut Unit = u;
                let lowered = matches!(u.family.as_deref(), Some("gemm" | "attention"))
                    || u.name.contains("conv");
                if lowered {
                    u.autocast.get_or_insert_with(|| to.to_string());
                }
            }
        }
        if !unit {
            continue;
        }
        let around: Vec<&str> = annotations
            .iter()
            .filter(|(s, end, _)| *s <= e.start && e.start < *end)
            .map(|(_, _, n)| n.as_str())
            .collect();
        let mut take = |k: &str| match e.args.remove(k) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        units.push(Unit {
            phase: phase_of(&top_name, &around),
            family: profilednn_cost::framework::family(&e.name)
                .map(|f| super::framework::family_name(f).to_string()),
            logged_ms: (e.end - e.start).max(0.0) / 1e3,
            dims: take("Input Dims"),
            types: take("Input type"),
            strides: take("Input Strides"),
            concrete: take("Concrete Inputs"),
            outermost: top_name.clone(),
            autocast: None,
            name: std::mem::take(&mut e.name),
        });
    }
    StepUnits {
        iteration: range.clone(),
        units,
    }
}
