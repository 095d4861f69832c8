//! Sequence replay: one steady-state training iteration re-run the way training ran it.
//!
//! The isolated replay (benchdnn's view, [`super::replay_profile`]) times each problem in a
//! tight loop, so its operands stay in cache and its per-call overheads amortise; on small and
//! memory-bound primitives (element-wise, pooling, small inner products, reorders) that was
//! measured 2–5× faster than the same calls inside training (`docs/projection.md`). Here the
//! iteration's exec lines run in log order — each primitive created once, its tensors allocated
//! once — so every call finds the caches and TLBs the previous primitives left, as in training.
//! Each call is timed; a problem's figure is the median of its calls over the timed iterations.

use super::run::{prepare, summarize, Prepared};
use super::{problem_key, problems, ReplayResult, Session};
use profilednn_analysis::events::{for_each_event, Event};
use profilednn_analysis::{EventKind, Profile};
use profilednn_model::Primitive;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// How the iteration replayed was chosen, and what it took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SequenceSummary {
    /// How the steady-state iteration was cut out of the log.
    pub iteration_from: String,
    /// Exec calls in that iteration.
    pub calls_per_iteration: usize,
    /// Timed iterations (after warm-up ones).
    pub iterations: u32,
    /// Wall time of each timed iteration, summed over its calls, ms.
    pub per_iteration_ms: Vec<f64>,
}

/// How many iterations to run.
#[derive(Debug, Clone, Copy)]
pub struct SequenceTiming {
    pub warmup: u32,
    /// At least this many timed iterations…
    pub min_iterations: u32,
    /// …and more until this much time was measured (ms), up to `max_iterations`.
    pub min_time_ms: f64,
    pub max_iterations: u32,
}

impl Default for SequenceTiming {
    fn default() -> Self {
        SequenceTiming {
            warmup: 2,
            min_iterations: 5,
            min_time_ms: 500.0,
            max_iterations: 50,
        }
    }
}

/// The exec calls of one steady-state iteration, in log order, and how it was found: between
/// the last two iteration markers; else the last `1/N` of the exec calls when the log's
/// iteration count `N` divides them (the repeating pattern); else the whole log.
pub fn steady_iteration(
    input: profilednn_verbose::LogInput,
    profile: &Profile,
) -> (Vec<Arc<Primitive>>, String) {
    let mut calls: Vec<Arc<Primitive>> = Vec::new();
    let mut marks: Vec<usize> = Vec::new();
    for_each_event(input, |e| match e {
        Event::Primitive(p) if p.kind == EventKind::Exec => calls.push(p.primitive),
        Event::Iteration { .. } => marks.push(calls.len()),
        _ => {}
    });
    marks.dedup();
    if marks.len() >= 2 {
        let (a, b) = (marks[marks.len() - 2], marks[marks.len() - 1]);
        if b > a {
            return (
                calls[a..b].to_vec(),
                format!(
                    "between the last two iteration markers ({} markers)",
                    marks.len()
                ),
            );
        }
    }
    let n = profile.iterations.as_ref().map_or(1, |i| i.count).max(1) as usize;
    if n > 1 && calls.len().is_multiple_of(n) {
        let per = calls.len() / n;
        let tail = calls.split_off(calls.len() - per);
        return (
            tail,
            format!("the last of {n} iterations of the repeating call pattern"),
        );
    }
    (
        calls,
        "the whole log (no iteration boundaries found)".into(),
    )
}

/// Replays `sequence` (one iteration's exec calls in order) and returns one result per problem
/// of `profile`: problems of the iteration get the median of their calls in sequence; the
/// others are reported as not replayed, with the reason.
pub fn replay_sequence(
    s: &Session,
    profile: &Profile,
    sequence: &[Arc<Primitive>],
    iteration_from: String,
    t: &SequenceTiming,
    mut progress: impl FnMut(usize, usize, &str),
) -> (Vec<ReplayResult>, SequenceSummary) {
    // Each distinct problem of the iteration built and prepared once.
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut order: Vec<usize> = Vec::with_capacity(sequence.len());
    let mut firsts: Vec<&Arc<Primitive>> = Vec::new();
    for p in sequence {
        let key = problem_key(p);
        let next = index.len();
        let i = *index.entry(key).or_insert(next);
        if i == firsts.len() {
            firsts.push(p);
        }
        order.push(i);
    }
    let n = firsts.len();
    let mut built = Vec::with_capacity(n);
    for (i, p) in firsts.iter().enumerate() {
        progress(i, n, &format!("create {} {}", p.kind, p.problem));
        built.push(super::build::build(&s.dnnl, s.engine, p));
    }
    let prepared: Vec<Result<Prepared, String>> = built
        .iter()
        .map(|b| match b {
            Ok(b) => prepare(&s.dnnl, s.engine, b),
            Err(e) => Err(e.clone()),
        })
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut failed: Vec<Option<String>> =
        prepared.iter().map(|p| p.as_ref().err().cloned()).collect();
    let mut per_iteration = Vec::new();
    let mut measured = 0.0;
    let total_runs = t.warmup + t.max_iterations;
    let mut it = 0;
    while it < total_runs {
        let timed = it >= t.warmup;
        if timed && per_iteration.len() as u32 >= t.min_iterations && measured >= t.min_time_ms {
            break;
        }
        progress(
            it as usize,
            total_runs as usize,
            &format!("iteration {} of {} calls", it + 1, order.len()),
        );
        let mut sum = 0.0;
        for &i in &order {
            if failed[i].is_some() {
                continue;
            }
            let Ok(p) = &prepared[i] else { continue };
            match p.execute(s.stream) {
                Ok(ms) => {
                    sum += ms;
                    if timed {
                        times[i].push(ms);
                    }
                }
                Err(e) => failed[i] = Some(e),
            }
        }
        if timed {
            per_iteration.push(sum);
            measured += sum;
        }
        it += 1;
    }
    let mut by_key: HashMap<String, (Option<super::run::Measurement>, Option<String>)> =
        HashMap::new();
    for (key, &i) in &index {
        let r = match (&prepared[i], &failed[i]) {
            (_, Some(e)) => (None, Some(e.clone())),
            (Ok(p), None) if !times[i].is_empty() => (
                Some(summarize(
                    p.implementation.clone(),
                    std::mem::take(&mut times[i]),
                )),
                None,
            ),
            _ => (None, Some("no timed call".into())),
        };
        by_key.insert(key.clone(), r);
    }
    drop(prepared);
    drop(built);
    let results = problems(profile)
        .into_iter()
        .map(|pr| {
            let (measurement, skipped) = by_key.remove(&pr.key).unwrap_or((
                None,
                Some("not in the steady-state iteration replayed".into()),
            ));
            ReplayResult {
                implementation_matches: measurement
                    .as_ref()
                    .map(|m| pr.implementations.contains(&m.implementation)),
                prim_kind: pr.primitive.kind.to_string(),
                prop_kind: pr.primitive.prop_kind.to_string(),
                shapes: pr.primitive.problem.clone(),
                key: pr.key,
                calls: pr.calls,
                log_time_ms: pr.time_ms,
                log_implementations: pr.implementations,
                measurement,
                skipped,
            }
        })
        .collect();
    (
        results,
        SequenceSummary {
            iteration_from,
            calls_per_iteration: order.len(),
            iterations: per_iteration.len() as u32,
            per_iteration_ms: per_iteration,
        },
    )
}
