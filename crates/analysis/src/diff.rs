//! The paper's "discrepancy" analysis: two runs side by side (reference vs yours, before vs
//! after an optimisation, machine A vs B), per group and per primitive.
//!
//! Primitives are matched by *identity*: kind, propagation, problem, data types and algorithm,
//! but not the implementation or memory layout, so that "the same convolution now runs a
//! reference kernel" or "… now in a blocked layout" shows up as a change of that primitive.
//! `ignore_batch` also forgets the minibatch size (runs at different batch sizes);
//! `ignore_dtype` forgets data types (an f32 run against its bf16 version).

use crate::profile::{Entry, EventKind, Profile};
use crate::scale::Scale;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, Default)]
pub struct DiffOptions {
    pub ignore_batch: bool,
    pub ignore_dtype: bool,
    /// Rows kept in the per-primitive tables.
    pub top: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Side {
    pub calls: f64,
    pub time_ms: f64,
    pub implementations: Vec<String>,
    pub primitives: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Appeared,
    Disappeared,
    Matched,
}

#[derive(Debug, Clone, Serialize)]
pub struct PrimitiveDiff {
    pub prim_kind: String,
    pub prop_kind: String,
    /// The matching key's problem (with `*` for a forgotten minibatch).
    pub shapes: String,
    pub dtype: String,
    pub algorithm: String,
    pub status: Status,
    pub before: Side,
    pub after: Side,
    pub delta_ms: f64,
    /// `before / after` time (> 1: faster after); `None` when a side is missing or zero.
    pub speedup: Option<f64>,
    pub implementation_changed: bool,
    pub calls_changed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupDiff {
    pub prim_kind: String,
    pub prop_kind: String,
    pub before: Side,
    pub after: Side,
    pub delta_ms: f64,
    pub speedup: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub schema: &'static str,
    pub before: String,
    pub after: String,
    /// Per iteration when both runs' iteration counts are known, else the whole logs.
    pub scale: Scale,
    pub before_iterations: Option<u64>,
    pub after_iterations: Option<u64>,
    pub ignore_batch: bool,
    pub ignore_dtype: bool,
    pub before_time_ms: f64,
    pub after_time_ms: f64,
    pub speedup: Option<f64>,
    /// The wall-clock training step of both runs, when both logs have iteration markers and
    /// timestamps ([`Diff::with_steps`]): what the user waits for, headlined before oneDNN's
    /// time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<StepDiff>,
    pub groups: Vec<GroupDiff>,
    /// Matched primitives, largest |Δ| first (cut to `top`).
    pub changes: Vec<PrimitiveDiff>,
    pub appeared: Vec<PrimitiveDiff>,
    pub disappeared: Vec<PrimitiveDiff>,
    pub implementation_changes: Vec<PrimitiveDiff>,
    pub call_changes: Vec<PrimitiveDiff>,
    pub matched: usize,
    pub appeared_total: usize,
    pub disappeared_total: usize,
    /// Rows of `changes` before the cut to `top` (= `matched`).
    pub changes_total: usize,
    /// Primitives whose implementation changed, before the cut to `top`.
    pub implementation_changes_total: usize,
    /// Primitives whose call count changed, before the cut to `top`.
    pub call_changes_total: usize,
}

pub const SCHEMA: &str = "profilednn.diff.v1";

/// The problem with its minibatch replaced by `*`: `mbN` in desc style; in dims style a
/// leading dimension equal to the run's batch size (weights' leading dims are left alone
/// unless they happen to equal it).
fn forget_batch(problem: &str, batch: Option<u64>) -> String {
    if let Some(at) = problem.find("mb") {
        let end = problem[at + 2..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(problem.len(), |e| at + 2 + e);
        if end > at + 2 {
            return format!("{}mb*{}", &problem[..at], &problem[end..]);
        }
    }
    let Some(b) = batch else {
        return problem.to_string();
    };
    let bs = b.to_string();
    problem
        .split(':')
        .map(|t| match t.split_once('x') {
            Some((first, rest)) if first == bs => format!("*x{rest}"),
            _ => t.to_string(),
        })
        .collect::<Vec<_>>()
        .join(":")
}

type Key = (String, String, String, String, String);

fn key(e: &Entry, opts: &DiffOptions, batch: Option<u64>) -> Key {
    let p = &e.primitive;
    (
        p.kind.to_string(),
        p.prop_kind.to_string(),
        if opts.ignore_batch {
            forget_batch(&p.problem, batch)
        } else {
            p.problem.clone()
        },
        if opts.ignore_dtype {
            String::new()
        } else {
            p.dtype_summary()
        },
        p.algorithm().unwrap_or("").to_string(),
    )
}

fn sides(p: &Profile, opts: &DiffOptions, scale: f64) -> BTreeMap<Key, Side> {
    let batch = p.mini_batch();
    let mut m: BTreeMap<Key, (Side, BTreeSet<String>)> = BTreeMap::new();
    for e in p.entries.iter().filter(|e| e.event == EventKind::Exec) {
        let s = m.entry(key(e, opts, batch)).or_default();
        s.0.calls += e.calls as f64 / scale;
        s.0.time_ms += e.time_ms() / scale;
        s.0.primitives += 1;
        s.1.insert(e.primitive.implementation.clone());
    }
    m.into_iter()
        .map(|(k, (mut s, impls))| {
            s.implementations = impls.into_iter().collect();
            (k, s)
        })
        .collect()
}

fn speedup(before: f64, after: f64) -> Option<f64> {
    (before > 0.0 && after > 0.0).then(|| before / after)
}

/// The steady training step before and after.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StepDiff {
    pub before: crate::ranks::SteadyStep,
    pub after: crate::ranks::SteadyStep,
    /// Before's wall time over after's.
    pub speedup: Option<f64>,
    /// Where both steps come from: `log` (its iteration markers' timestamps) or `trace` (the
    /// PyTorch traces' iteration ranges, when a log has no timestamped oneDNN line to give it:
    /// a compiled or f32 model that never calls oneDNN).
    pub from: &'static str,
}

impl Diff {
    /// This comparison with the runs' wall-clock steps, when both are known.
    pub fn with_steps(
        mut self,
        before: Option<crate::ranks::SteadyStep>,
        after: Option<crate::ranks::SteadyStep>,
    ) -> Diff {
        if let (Some(b), Some(a)) = (before, after) {
            self.step = Some(StepDiff {
                before: b,
                after: a,
                speedup: (a.wall_ms > 0.0).then(|| b.wall_ms / a.wall_ms),
                from: "log",
            });
        }
        self
    }

    /// With the runs' traces: when the logs gave no step for both, the traces' steady steps
    /// ([`crate::compile_cost::trace_step`]) for both, so that the two are the same measure.
    pub fn with_trace_steps(
        mut self,
        before: &profilednn_torchtrace::TorchJoin,
        after: &profilednn_torchtrace::TorchJoin,
    ) -> Diff {
        if self.step.is_some() {
            return self;
        }
        use crate::compile_cost::trace_step;
        self = self.with_steps(trace_step(before), trace_step(after));
        if let Some(s) = &mut self.step {
            s.from = "trace";
        }
        self
    }
}

pub fn diff(before: &Profile, after: &Profile, opts: &DiffOptions) -> Diff {
    let bi = before.iterations.as_ref().map(|i| i.count);
    let ai = after.iterations.as_ref().map(|i| i.count);
    let (scale, bs, as_) = match (bi, ai) {
        (Some(b), Some(a)) if b > 0 && a > 0 => (Scale::PerIteration, b as f64, a as f64),
        _ => (Scale::Total, 1.0, 1.0),
    };
    let b = sides(before, opts, bs);
    let a = sides(after, opts, as_);
    let keys: BTreeSet<&Key> = b.keys().chain(a.keys()).collect();
    let mut rows = Vec::new();
    for k in keys {
        let (sb, sa) = (b.get(k), a.get(k));
        let status = match (sb, sa) {
            (Some(_), None) => Status::Disappeared,
            (None, Some(_)) => Status::Appeared,
            _ => Status::Matched,
        };
        let before = sb.cloned().unwrap_or_default();
        let after = sa.cloned().unwrap_or_default();
        rows.push(PrimitiveDiff {
            prim_kind: k.0.clone(),
            prop_kind: k.1.clone(),
            shapes: k.2.clone(),
            dtype: k.3.clone(),
            algorithm: k.4.clone(),
            status,
            delta_ms: after.time_ms - before.time_ms,
            speedup: speedup(before.time_ms, after.time_ms),
            implementation_changed: status == Status::Matched
                && before.implementations != after.implementations,
            calls_changed: status == Status::Matched && (before.calls - after.calls).abs() > 1e-9,
            before,
            after,
        });
    }
    let mut groups: BTreeMap<(String, String), GroupDiff> = BTreeMap::new();
    for r in &rows {
        let g = groups
            .entry((r.prim_kind.clone(), r.prop_kind.clone()))
            .or_insert_with(|| GroupDiff {
                prim_kind: r.prim_kind.clone(),
                prop_kind: r.prop_kind.clone(),
                before: Side::default(),
                after: Side::default(),
                delta_ms: 0.0,
                speedup: None,
            });
        for (dst, src) in [(&mut g.before, &r.before), (&mut g.after, &r.after)] {
            dst.calls += src.calls;
            dst.time_ms += src.time_ms;
            dst.primitives += src.primitives;
        }
    }
    let mut groups: Vec<GroupDiff> = groups
        .into_values()
        .map(|mut g| {
            g.delta_ms = g.after.time_ms - g.before.time_ms;
            g.speedup = speedup(g.before.time_ms, g.after.time_ms);
            g
        })
        .collect();
    groups.sort_by(|x, y| {
        (y.before.time_ms.max(y.after.time_ms)).total_cmp(&x.before.time_ms.max(x.after.time_ms))
    });
    let by_delta = |v: &mut Vec<PrimitiveDiff>| {
        v.sort_by(|x, y| y.delta_ms.abs().total_cmp(&x.delta_ms.abs()));
    };
    let pick = |f: &dyn Fn(&PrimitiveDiff) -> bool| -> Vec<PrimitiveDiff> {
        let mut v: Vec<PrimitiveDiff> = rows.iter().filter(|r| f(r)).cloned().collect();
        by_delta(&mut v);
        v
    };
    let mut changes = pick(&|r| r.status == Status::Matched);
    let matched = changes.len();
    changes.truncate(opts.top);
    let mut appeared = pick(&|r| r.status == Status::Appeared);
    let mut disappeared = pick(&|r| r.status == Status::Disappeared);
    let (appeared_total, disappeared_total) = (appeared.len(), disappeared.len());
    appeared.truncate(opts.top);
    disappeared.truncate(opts.top);
    let mut implementation_changes = pick(&|r| r.implementation_changed);
    let implementation_changes_total = implementation_changes.len();
    implementation_changes.truncate(opts.top);
    let mut call_changes = pick(&|r| r.calls_changed);
    let call_changes_total = call_changes.len();
    call_changes.truncate(opts.top);
    let before_time_ms: f64 = rows
        .iter()
        .map(|r| r.before.time_ms)
        .fold(0.0, |a, b| a + b);
    let after_time_ms: f64 = rows.iter().map(|r| r.after.time_ms).fold(0.0, |a, b| a + b);
    Diff {
        schema: SCHEMA,
        before: before.sources.join(", "),
        after: after.sources.join(", "),
        scale,
        before_iterations: bi,
        after_iterations: ai,
        ignore_batch: opts.ignore_batch,
        ignore_dtype: opts.ignore_dtype,
        before_time_ms,
        after_time_ms,
        speedup: speedup(before_time_ms, after_time_ms),
        step: None,
        groups,
        changes,
        appeared,
        disappeared,
        implementation_changes,
        call_changes,
        matched,
        appeared_total,
        disappeared_total,
        changes_total: matched,
        implementation_changes_total,
        call_changes_total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_is_forgotten_in_both_spellings() {
        assert_eq!(
            forget_batch(
                "mb8_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1",
                None
            ),
            "mb*_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1"
        );
        assert_eq!(forget_batch("g1mb2_ic3oc64", None), "g1mb*_ic3oc64");
        assert_eq!(
            forget_batch("8x64x56x56:1x64x1x1", Some(8)),
            "*x64x56x56:1x64x1x1"
        );
        // A weights reorder whose leading dim is not the batch keeps it.
        assert_eq!(forget_batch("256x64x1x1", Some(8)), "256x64x1x1");
        assert_eq!(crate::profile::mb_field("mb16ic3ih8iw8"), Some(16));
    }
}
