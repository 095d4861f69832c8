//! The join itself: each primitive of the log placed inside the framework op (and the
//! nn.Modules) running when it ran, then summed by op, phase, module and iteration. Apart from
//! the trace's reading and its types, so that each step of the join is a function of its own.

use super::{
    compiled, framework, module_names, phase_of, runs_in, IterationRow, Op, OpRow, Phase,
    TorchJoin, TorchTrace, ITERATION_RANGE,
};
use profilednn_model::PrimitiveKind;
use std::collections::BTreeMap;

/// What the join takes of a oneDNN log, in log order: its iteration markers and its
/// executions. The caller reads the log (`profilednn_analysis::torch_join`), so that this crate
/// needs no log scanner of its own.
#[derive(Debug, Clone, Copy)]
pub enum LogEvent<'a> {
    /// A `profilednn,iteration,N` marker.
    Iteration,
    /// One primitive execution.
    Exec(Exec<'a>),
}

/// One primitive execution of the log, as the join places it.
#[derive(Debug, Clone, Copy)]
pub struct Exec<'a> {
    pub kind: &'a PrimitiveKind,
    /// Start on the epoch clock (ms), when the log carries timestamps.
    pub timestamp_ms: Option<f64>,
    /// Its time (ps), when the line has one.
    pub time_ps: Option<u64>,
}

/// Joins `trace` with the log whose events `log` walks: `log` is called once, with the sink
/// each event of the log goes to, in log order.
pub fn join(trace: &TorchTrace, log: impl FnOnce(&mut dyn FnMut(LogEvent<'_>))) -> TorchJoin {
    join_leaving_out(trace, log, false)
}

/// [`join`] with the first iteration left out too, as a compiling one is (`warm_up` says
/// which): it carries the run's one-time work (primitive creation and JIT, first-touch page
/// faults, the dispatcher's caches), 1.6-2.9x a later iteration on the machine library's
/// transformers, almost all of it in element-wise ops. A projection onto another machine
/// (`project --to`) moves the steady step; the warm-up does not scale with the roofs. Only
/// when at least two iterations remain.
pub fn join_steady(
    trace: &TorchTrace,
    log: impl FnOnce(&mut dyn FnMut(LogEvent<'_>)),
) -> TorchJoin {
    join_leaving_out(trace, log, true)
}

fn join_leaving_out(
    trace: &TorchTrace,
    log: impl FnOnce(&mut dyn FnMut(LogEvent<'_>)),
    warm_up: bool,
) -> TorchJoin {
    let ops = &trace.ops;
    let compiling = compiled::compiling_iterations(ops);
    let (top, parent_top) = top_level(ops);
    let loop_iterations = loop_iterations(ops, &top);
    let compile_excluded: &[compiled::Compiling] = if compiling.len() < loop_iterations {
        &compiling
    } else {
        &[]
    };
    let mut excluded = compile_excluded.to_vec();
    let first = warm_up
        .then(|| first_iteration(ops))
        .flatten()
        .filter(|f| excluded.iter().all(|c| c.index != f.index))
        .filter(|_| loop_iterations >= excluded.len() + 3);
    if let Some(f) = &first {
        excluded.push(f.clone());
        excluded.sort_by(|a, b| a.start.total_cmp(&b.start));
    }
    let excluded = &excluded[..];
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
    let mut j = TorchJoin {
        trace_ops: cpu.len(),
        python_events: ops.iter().filter(|o| o.python).count(),
        compiled_regions: cpu
            .iter()
            .filter(|&&i| ops[i].name.starts_with("Torch-Compiled Region"))
            .count(),
        ..Default::default()
    };
    let places = Places {
        ops,
        cpu: &cpu,
        modules: &modules,
        parent_top: &parent_top,
        base_us: trace.base_ns.unwrap_or(0.0) / 1e3,
        steady: &steady,
    };
    let mut placed = Placed::default();
    log(&mut |e| match e {
        LogEvent::Iteration => placed.markers += 1,
        LogEvent::Exec(p) => placed.exec(&places, &p),
    });
    j.attributed_calls = placed.attributed_calls;
    j.attributed_ms = placed.attributed_ms;
    j.unattributed_calls = placed.unattributed_calls;
    j.unattributed_ms = placed.unattributed_ms;
    j.framework = framework::framework_ops(trace, &placed.dnn_by_op, &steady);
    j.dynamo = compiled::dynamo(trace);
    // Each top-level op's phase, found once (the annotations around it decide).
    let top_phase: Vec<Phase> = top
        .iter()
        .map(|&i| phase_of(&ops[i].name, &around(ops[i].start)))
        .collect();
    let (rows, phases) = top_rows(ops, &top, &top_phase, &placed.per_top, &steady);
    j.per_iteration = per_iteration(ops, &top, &top_phase, &placed.per_top);
    let steady_top: Vec<usize> = top
        .iter()
        .copied()
        .filter(|&i| steady(ops[i].start))
        .collect();
    j.module_backward = module_backward(ops, &steady_top, &placed.per_top, &modules);
    let finish = |m: BTreeMap<String, OpRow>| {
        let mut v: Vec<OpRow> = m.into_values().map(OpRow::with_outside).collect();
        v.sort_by(|a, b| b.outside_ms.total_cmp(&a.outside_ms));
        v
    };
    j.ops = finish(rows);
    let mut iss: Vec<OpRow> = placed.issuing.into_values().collect();
    iss.sort_by(|a, b| b.onednn_ms.total_cmp(&a.onednn_ms));
    j.issuing_ops = iss;
    j.issued = placed
        .issued
        .into_iter()
        .map(|((k, o), n)| (k, o, n))
        .collect();
    j.modules = module_rows(ops, &modules, &placed.module_dnn, &steady);
    j.phases = finish(
        phases
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    );
    set_iterations(&mut j, placed.markers, excluded);
    j.warm_up = first
        .map(|f| f.index)
        .filter(|i| j.compiling.iter().any(|c| c.index == *i));
    j.warnings.extend(compile_warning(
        ops,
        &compiling,
        compile_excluded,
        loop_iterations,
    ));
    j.warnings.extend(coverage_warning(&j));
    j.warnings.extend(truncation_warning(trace));
    j.log_span_ms = placed.log_span;
    j.warnings.extend(clock_warnings(
        trace,
        placed.execs,
        placed.timestamped,
        placed.log_span,
    ));
    j.runs_in = runs_in::classes(&j);
    j
}

/// The first iteration range (`profilednn.iteration#N` with the lowest N), as a range to
/// leave out (no compile time of its own).
fn first_iteration(ops: &[Op]) -> Option<compiled::Compiling> {
    ops.iter()
        .filter(|o| o.annotation)
        .filter_map(|o| {
            let index = o.name.strip_prefix(ITERATION_RANGE)?.parse::<u64>().ok()?;
            Some(compiled::Compiling {
                index,
                start: o.start,
                end: o.end,
                compile_ms: 0.0,
            })
        })
        .min_by_key(|c| c.index)
}

/// The iterations the join's figures are of: the log's (its markers less the trailing one), the
/// trace's iteration rows within them, those that compiled, and the steady ones the trace's
/// per-iteration figures divide by.
fn set_iterations(j: &mut TorchJoin, markers: u64, excluded: &[compiled::Compiling]) {
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
}

/// Top-level cpu ops (not inside another cpu op of the same thread), in start order, and the
/// top-level op each cpu op runs inside (itself for a top-level one): the rows the join sums
/// into.
fn top_level(ops: &[Op]) -> (Vec<usize>, Vec<Option<usize>>) {
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
    (top, parent_top)
}

/// The loop's iterations: the ranges that hold a top-level op of their thread (the range
/// `profilednn.profile` opens after the last step holds none). Every one of them compiling
/// (a recompile each step, a one-iteration trace) leaves no steady one: the caller keeps them
/// all then.
fn loop_iterations(ops: &[Op], top: &[usize]) -> usize {
    ops.iter()
        .filter(|r| r.annotation && r.name.starts_with(ITERATION_RANGE))
        .filter(|r| {
            let from = top.partition_point(|&i| ops[i].start < r.start);
            top[from..]
                .iter()
                .take_while(|&&i| ops[i].start < r.end)
                .any(|&i| ops[i].tid == r.tid)
        })
        .count()
}

/// Where a primitive of the log can land in the trace: the trace's ops, its cpu ops and
/// module intervals (each in start order), the clock offset between the two, and which times
/// are of steady iterations.
struct Places<'a> {
    ops: &'a [Op],
    cpu: &'a [usize],
    modules: &'a [usize],
    parent_top: &'a [Option<usize>],
    /// The trace's base time, µs since the epoch.
    base_us: f64,
    steady: &'a dyn Fn(f64) -> bool,
}

impl Places<'_> {
    /// Innermost cpu op containing `t`: walk back over ops starting before t.
    fn innermost(&self, t: f64) -> Option<usize> {
        let ops = self.ops;
        let k = self.cpu.partition_point(|&i| ops[i].start <= t);
        self.cpu[..k]
            .iter()
            .rev()
            .take(20_000)
            .copied()
            .find(|&i| ops[i].end >= t)
    }
}

/// The log's executions as the trace sees them, gathered in one pass over the log: the sums
/// the join's rows are made of, and the counts its warnings need.
#[derive(Default)]
struct Placed {
    /// The log's iteration markers.
    markers: u64,
    /// Executions, and how many of them carry a timestamp.
    execs: u64,
    timestamped: u64,
    /// The log's clock span (epoch ms).
    log_span: Option<(f64, f64)>,
    attributed_calls: u64,
    attributed_ms: f64,
    unattributed_calls: u64,
    unattributed_ms: f64,
    /// oneDNN time and primitives inside each module (a module's include its children's).
    module_dnn: BTreeMap<usize, (f64, u64)>,
    /// oneDNN time and primitives under each top-level op.
    per_top: BTreeMap<usize, (f64, u64)>,
    issuing: BTreeMap<String, OpRow>,
    issued: BTreeMap<(String, String), u64>,
    /// oneDNN time by the innermost op that issued it: where each framework op's work ran.
    dnn_by_op: BTreeMap<usize, f64>,
}

impl Placed {
    /// Places one execution `p`: in every module around it, and in the innermost op around it
    /// (and that op's top-level op), or among the unattributed when no op is.
    fn exec(&mut self, at: &Places, p: &Exec<'_>) {
        let ops = at.ops;
        let ms = p.time_ps.unwrap_or(0) as f64 / 1e9;
        self.execs += 1;
        if let Some(ts) = p.timestamp_ms {
            self.timestamped += 1;
            self.log_span = Some(
                self.log_span
                    .map_or((ts, ts + ms), |(a, b)| (a.min(ts), b.max(ts + ms))),
            );
        }
        if let Some(ts) = p.timestamp_ms {
            // Every module around the primitive (a module's time includes its children's).
            let t = ts * 1e3 - at.base_us;
            let k = at.modules.partition_point(|&i| ops[i].start <= t);
            for &m in at.modules[..k].iter().rev().take(20_000) {
                if ops[m].end >= t {
                    let x = self.module_dnn.entry(m).or_default();
                    x.0 += ms;
                    x.1 += 1;
                }
            }
        }
        let hit = p
            .timestamp_ms
            .and_then(|ts| at.innermost(ts * 1e3 - at.base_us));
        let Some(i) = hit else {
            self.unattributed_calls += 1;
            self.unattributed_ms += ms;
            return;
        };
        self.attributed_calls += 1;
        self.attributed_ms += ms;
        *self.dnn_by_op.entry(i).or_default() += ms;
        if let Some(t) = at.parent_top[i] {
            let x = self.per_top.entry(t).or_default();
            x.0 += ms;
            x.1 += 1;
        }
        // The issuing ops and the reorders' causes are per (steady) iteration
        // figures: not of an iteration that compiled.
        if (at.steady)(ops[i].start) {
            let r = self
                .issuing
                .entry(ops[i].name.clone())
                .or_insert_with(|| OpRow {
                    name: ops[i].name.clone(),
                    ..Default::default()
                });
            r.onednn_ms += ms;
            r.primitives += 1;
            *self
                .issued
                .entry((p.kind.to_string(), ops[i].name.clone()))
                .or_default() += 1;
        }
    }
}

/// The steady top-level ops summed by (phase, name) and by phase: the op and phase rows.
fn top_rows(
    ops: &[Op],
    top: &[usize],
    top_phase: &[Phase],
    per_top: &BTreeMap<usize, (f64, u64)>,
    steady: &dyn Fn(f64) -> bool,
) -> (BTreeMap<String, OpRow>, BTreeMap<&'static str, OpRow>) {
    let mut rows: BTreeMap<String, OpRow> = BTreeMap::new();
    // Keyed by name: the rows come out in the order they always had (alphabetical).
    let mut phases: BTreeMap<&'static str, OpRow> = BTreeMap::new();
    for (&i, &ph) in top.iter().zip(top_phase) {
        let op = &ops[i];
        if !steady(op.start) {
            continue;
        }
        let dur = (op.end - op.start) / 1e3;
        let (dnn, prims) = per_top.get(&i).copied().unwrap_or_default();
        rows.entry(format!("{ph}\t{}", op.name))
            .or_insert_with(|| OpRow::new(&op.name, Some(ph)))
            .add(dur, dnn, prims);
        phases
            .entry(ph.as_str())
            .or_insert_with(|| OpRow::new(ph.as_str(), None))
            .add(dur, dnn, prims);
    }
    (rows, phases)
}

/// The steady nn.Module forwards summed by name, longest first, with the oneDNN time inside
/// each (`module_dnn`).
fn module_rows(
    ops: &[Op],
    modules: &[usize],
    module_dnn: &BTreeMap<usize, (f64, u64)>,
    steady: &dyn Fn(f64) -> bool,
) -> Vec<OpRow> {
    let mut mods: BTreeMap<String, OpRow> = BTreeMap::new();
    for &m in modules.iter().filter(|&&m| steady(ops[m].start)) {
        let name = module_names::module_name(&ops[m]);
        let (dnn, prims) = module_dnn.get(&m).copied().unwrap_or_default();
        mods.entry(name.to_string())
            .or_insert_with(|| OpRow::new(name, Some(Phase::Forward)))
            .add((ops[m].end - ops[m].start) / 1e3, dnn, prims);
    }
    let mut mods: Vec<OpRow> = mods.into_values().map(OpRow::with_outside).collect();
    mods.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    mods
}

/// Why compilation is in the figures, if it is: every iteration compiled (none left out), or
/// the trace compiled without iteration ranges to set the compilation apart.
fn compile_warning(
    ops: &[Op],
    compiling: &[compiled::Compiling],
    excluded: &[compiled::Compiling],
    loop_iterations: usize,
) -> Option<String> {
    if !compiling.is_empty() && excluded.is_empty() {
        Some(format!(
            "every one of the trace's {} iteration(s) compiled (torch.compile's first call, or \
             recompiling each step: look for guards that fail, e.g. with \
             TORCH_LOGS=recompiles): the PyTorch view's figures include the compilation; trace \
             more steps",
            compiling.len()
        ))
    } else if compiling.is_empty()
        && loop_iterations == 0
        && ops.iter().any(|o| compiled::is_compilation(&o.name))
    {
        Some(
            "the trace holds torch.compile's compilation but no iteration ranges to set it \
             apart: its figures include the compilation; record with `profilednn.profile()` \
             (it marks each step)"
                .to_string(),
        )
    } else {
        None
    }
}

/// The trace covers fewer (or other) iterations than the log: say what the per-iteration
/// figures divide by.
fn coverage_warning(j: &TorchJoin) -> Option<String> {
    let covered = if j.per_iteration.is_empty() {
        j.iterations
    } else {
        Some(j.per_iteration.len() as u64)
    };
    if let (Some(t), Some(l), Some(d)) = (covered, j.log_iterations, j.iterations) {
        if t != l {
            return Some(format!(
                "the trace covers {t} of the log's {l} iterations: the PyTorch view's \
                 per-iteration figures divide by {d}"
            ));
        }
    }
    None
}

/// The trace's JSON ended early, or its stream failed (a `.gz` cut short): only the events
/// before that point are in the join.
fn truncation_warning(trace: &TorchTrace) -> Option<String> {
    let at = trace.truncated_at?;
    let how = match &trace.stopped_by {
        Some(e) => format!(
            "reading the trace stopped after {at} bytes of its JSON ({e}: a .gz cut short?)"
        ),
        None => format!(
            "the trace ends inside its JSON after {at} bytes (a run stopped while writing it?)"
        ),
    };
    Some(format!(
        "{how}: its {} events before that point are read, the rest is missing; record the run \
         again and let it finish to have them all",
        trace.ops.len()
    ))
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
    if trace.base_ns.is_none() {
        if !trace.ops.is_empty() {
            w.push(
                "the trace has no baseTimeNanoseconds: its clock cannot be joined with the log's"
                    .to_string(),
            );
        }
        return w;
    }
    if let Some(gap) = super::same_run::clock_gap(trace, log_span) {
        w.push(gap.to_string());
    }
    w
}

/// Rows per iteration range: the top-level ops (of the range's thread) that start inside it,
/// by phase. `top` is in start order, so each range is a binary search away.
fn per_iteration(
    ops: &[Op],
    top: &[usize],
    top_phase: &[Phase],
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
        // Keyed by name: the JSON lists them in the order it always had (alphabetical).
        let mut phases: BTreeMap<&'static str, OpRow> = BTreeMap::new();
        let mut onednn = 0.0;
        for (&i, &ph) in top[from..to].iter().zip(&top_phase[from..to]) {
            let op = &ops[i];
            if op.tid != r.tid {
                continue;
            }
            let (dnn, prims) = per_top.get(&i).copied().unwrap_or_default();
            phases
                .entry(ph.as_str())
                .or_insert_with(|| OpRow::new(ph.as_str(), Some(ph)))
                .add((op.end - op.start) / 1e3, dnn, prims);
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
                .or_insert_with(|| OpRow::new(name, Some(Phase::Backward)))
                .add((op.end - op.start) / 1e3, dnn, prims);
        }
    }
    let mut v: Vec<OpRow> = rows.into_values().map(OpRow::with_outside).collect();
    v.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    v
}
