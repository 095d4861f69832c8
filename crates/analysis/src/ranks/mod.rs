//! The ranks of a data-parallel run side by side: each rank's time per iteration, its wall time
//! and the time it spends outside oneDNN (from timestamps), the straggler, and what makes it
//! slower.
//!
//! In synchronous data-parallel training every rank waits in the gradient all-reduce for the
//! slowest one, so all ranks have about the same wall time per iteration; what differs is how
//! much of it is oneDNN work. The straggler is the rank with the most oneDNN time per
//! iteration, and the others' extra time outside oneDNN is mostly waiting for it.
//!
//! Everything of a multi-rank run lives in this folder: how the ranks are found on disk
//! ([`logs`]: a launcher-labelled log or torchrun's `--log-dir` tree) and read as they stream
//! ([`scan`]: one tally per rank; [`events`]: each rank's events in order), which machine each
//! ran on ([`nodes`]), their spread at many ranks ([`spread`]), and how the run was launched
//! ([`launcher`]: the launcher's command line; [`sample`]: the ranks' processes as they run;
//! [`launch`]: what each launch setting costs).

pub mod events;
pub mod launch;
pub mod launcher;
pub mod logs;
pub mod nodes;
pub mod sample;
pub mod scan;
pub mod spread;

use crate::breakdown::{breakdown, GroupKey};
use crate::profile::Profile;
use profilednn_verbose::line::{classify, Line};
use serde::Serialize;

/// One rank's timing of one iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IterationTimes {
    /// 0-based, in marker order.
    pub iteration: usize,
    /// oneDNN execution time between this iteration's marker and the next.
    pub onednn_ms: f64,
    /// Timestamp of the first primitive after this marker to that after the next marker;
    /// `None` for the last iteration (nothing marks its end) or without timestamps.
    pub wall_ms: Option<f64>,
    /// `wall_ms - onednn_ms`: framework code, data loading and waiting for the other ranks.
    pub outside_ms: Option<f64>,
}

/// A log's steady training step, from its iteration markers and timestamps: the medians over
/// the steady iterations (the first third left out as warm-up, as `plan` and `project` do) of
/// the wall time, of the time outside oneDNN and of oneDNN's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadyStep {
    pub wall_ms: f64,
    pub outside_ms: f64,
    pub onednn_ms: f64,
    /// Steady iterations the medians are over.
    pub iterations: usize,
}

/// The steady step of one process's log (`bytes`, decompressed); `None` without markers and
/// timestamps, or without a steady iteration whose end is marked.
pub fn steady_step(bytes: &[u8]) -> Option<SteadyStep> {
    use crate::iterations::steady_median;
    let it = iteration_times(bytes);
    let (wall_ms, iterations) = steady_median(&[it.iter().map(|i| i.wall_ms).collect()])?;
    let (outside_ms, _) = steady_median(&[it.iter().map(|i| i.outside_ms).collect()])?;
    let onednn: Vec<Option<f64>> = it.iter().map(|i| i.wall_ms.map(|_| i.onednn_ms)).collect();
    let (onednn_ms, _) = steady_median(&[onednn])?;
    Some(SteadyStep {
        wall_ms,
        outside_ms,
        onednn_ms,
        iterations,
    })
}

/// Per-iteration times of one rank's lines (labels already removed), by iteration marker.
pub fn iteration_times(bytes: &[u8]) -> Vec<IterationTimes> {
    // Per marker: (exec ps since the marker, first timestamp after it).
    let mut marks: Vec<(u128, Option<f64>)> = Vec::new();
    for line in bytes.split(|&c| c == b'\n') {
        if line.starts_with(b"profilednn,iteration")
            || (line.starts_with(b"### ITER ") && memchr::memmem::find(line, b"BEGIN").is_some())
        {
            marks.push((0, None));
            continue;
        }
        let Some(m) = marks.last_mut() else { continue };
        if let Line::Primitive { head, time_ps, .. } = classify(line) {
            if head.operation == b"exec" {
                m.0 += u128::from(time_ps.unwrap_or(0));
            }
            if m.1.is_none() {
                m.1 = head.timestamp;
            }
        }
    }
    iteration_times_of_marks(marks)
}

/// Per-iteration times of a log read into `t` (the same figures as [`iteration_times`] of its
/// lines), from the markers and timestamps its chunks kept: a log, or a rank's lines, need not
/// be held in memory to know its iterations' wall time.
pub fn iteration_times_of_tally(t: &crate::Tally) -> Vec<IterationTimes> {
    // Per marker: (exec ps of the log before it, first timestamp after it).
    let mut marks: Vec<(u128, Option<f64>)> = Vec::new();
    let mut cum = 0u128;
    for c in t.chunks.values() {
        if let (Some(open), Some(ts)) = (marks.last_mut(), c.lead_ts) {
            // The last marker so far saw no timestamp in its own chunk: this chunk's first.
            open.1.get_or_insert(ts);
        }
        for m in &c.markers {
            marks.push((cum + m.exec_before_ps, m.first_ts_after));
        }
        cum += c.exec_ps;
    }
    let since: Vec<(u128, Option<f64>)> = (0..marks.len())
        .map(|i| {
            let end = marks.get(i + 1).map_or(cum, |m| m.0);
            (end - marks[i].0, marks[i].1)
        })
        .collect();
    iteration_times_of_marks(since)
}

/// Per-iteration times from what followed each iteration marker, in order: the oneDNN
/// execution time (ps) after it and the first primitive's timestamp after it. Shared by the
/// passes that gather them from lines ([`iteration_times`]) and from parsed events (`project`).
pub fn iteration_times_of_marks(mut marks: Vec<(u128, Option<f64>)>) -> Vec<IterationTimes> {
    // A marker after the last primitive opens no iteration (as in `iterations::detect`).
    if marks.len() > 1 && marks.last().is_some_and(|m| m.0 == 0 && m.1.is_none()) {
        marks.pop();
    }
    (0..marks.len())
        .map(|i| {
            let onednn_ms = marks[i].0 as f64 / 1e9;
            let wall_ms = match (marks[i].1, marks.get(i + 1).and_then(|m| m.1)) {
                (Some(a), Some(b)) if b >= a => Some(b - a),
                _ => None,
            };
            IterationTimes {
                iteration: i,
                onednn_ms,
                wall_ms,
                outside_ms: wall_ms.map(|w| (w - onednn_ms).max(0.0)),
            }
        })
        .collect()
}

/// One rank's figures.
#[derive(Debug, Clone, Serialize)]
pub struct RankView {
    pub rank: u32,
    /// The node it ran on, when the launcher or the logs' layout says (null: unknown).
    pub node: Option<String>,
    pub source: String,
    /// Executions of primitives.
    pub calls: u64,
    pub total_time_ms: f64,
    /// Whole iterations (by markers, else the call pattern).
    pub iterations: Option<u64>,
    /// oneDNN time per iteration.
    pub time_ms_per_iteration: Option<f64>,
    /// Mean wall time of the iterations whose wall time is known.
    pub wall_ms_per_iteration: Option<f64>,
    /// Mean time outside oneDNN of the same iterations.
    pub outside_ms_per_iteration: Option<f64>,
    /// The CPU runtime's thread count from the rank's header.
    pub threads: Option<u32>,
    /// The most common mini-batch (`mb`) of the rank's primitives.
    pub mini_batch: Option<u64>,
    /// First and last timestamp (ms since the epoch).
    pub first_timestamp_ms: Option<f64>,
    pub last_timestamp_ms: Option<f64>,
    /// Why this rank looks like it stopped before the others, if it does.
    pub stopped_early: Option<String>,
    pub per_iteration: Vec<IterationTimes>,
}

/// A primitive group whose time differs most between the straggler and the median rank.
#[derive(Debug, Clone, Serialize)]
pub struct RankDifference {
    /// `prim_kind prop_kind`.
    pub group: String,
    pub straggler_ms_per_iteration: f64,
    pub median_ms_per_iteration: f64,
    pub difference_ms_per_iteration: f64,
}

/// One of the slowest ranks and what it does more than the median rank.
#[derive(Debug, Clone, Serialize)]
pub struct SlowRank {
    pub rank: u32,
    /// Its node, when known: slow ranks spread over nodes are the ranks', gathered on one node
    /// the machine's.
    pub node: Option<String>,
    pub ms_per_iteration: f64,
    /// Its oneDNN time over the median rank's.
    pub ratio: f64,
    /// The primitive groups it spends more time in, per iteration, largest first.
    pub differences: Vec<RankDifference>,
}

/// How many of the slowest ranks are compared with the median one.
pub const SLOWEST: usize = 5;

/// How uneven the ranks are.
#[derive(Debug, Clone, Serialize)]
pub struct Imbalance {
    /// The rank with the most oneDNN time per iteration.
    pub straggler: u32,
    pub straggler_ms_per_iteration: f64,
    /// Median rank's oneDNN time per iteration (the lower middle one for an even count).
    pub median_ms_per_iteration: f64,
    /// straggler / median (1 = balanced).
    pub ratio: f64,
    /// What the straggler does more, per iteration, largest first.
    pub differences: Vec<RankDifference>,
    /// The straggler's mini-batch against the median rank's, when they differ.
    pub mini_batch: Option<(u64, u64)>,
    /// The slowest ranks (at most [`SLOWEST`], the straggler first, then those more than 1 %
    /// above the median rank), each with its cause.
    pub slowest: Vec<SlowRank>,
    /// The straggler's node, when nodes are known.
    pub straggler_node: Option<String>,
    /// A node whose every rank is slow ([`crate::ranks::nodes::slow_node`]): the machine, not the
    /// ranks' work. None on one node, or when no node is.
    pub slow_node: Option<crate::ranks::nodes::SlowNode>,
}

/// All ranks of one multi-rank log.
#[derive(Debug, Clone, Serialize)]
pub struct RankSet {
    /// The log the ranks came from (or the directory of per-rank logs).
    pub source: String,
    /// Whose labels told the ranks apart (`torchrun`, `Open MPI --tag-output`, …).
    pub launcher: String,
    pub ranks: Vec<RankView>,
    /// The nodes and their ranks (empty: nodes unknown, or one).
    pub nodes: Vec<crate::ranks::nodes::NodeRanks>,
    pub imbalance: Option<Imbalance>,
    /// The ranks' figures per iteration as distributions (min, median, p95, max).
    pub spread: crate::ranks::spread::RankSpread,
    /// Verbose lines without a rank label (counted in no rank).
    pub unlabelled_lines: u64,
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// Per-iteration (or, without iterations, total) oneDNN time of a rank: what ranks compare on.
fn load_of(r: &RankView) -> f64 {
    r.time_ms_per_iteration.unwrap_or(r.total_time_ms)
}

impl RankView {
    /// A rank's figures from its profile and its per-iteration times
    /// ([`iteration_times_of_tally`] of the tally the profile was built from).
    pub fn new(rank: u32, profile: &Profile, per_iteration: Vec<IterationTimes>) -> RankView {
        let total = profile.exec_time_ms();
        let iterations = profile.iterations.as_ref().map(|i| i.count);
        let per_iteration_ms = profile.iterations.as_ref().and_then(|i| i.mean_ms(total));
        let walled = || per_iteration.iter().filter(|i| i.wall_ms.is_some());
        RankView {
            rank,
            node: None,
            source: profile.sources.join(", "),
            calls: profile.exec_calls(),
            total_time_ms: total,
            iterations,
            time_ms_per_iteration: per_iteration_ms,
            wall_ms_per_iteration: mean(walled().filter_map(|i| i.wall_ms)),
            outside_ms_per_iteration: mean(walled().filter_map(|i| i.outside_ms)),
            threads: profile.metadata.threads,
            mini_batch: profile.mini_batch(),
            first_timestamp_ms: profile.timestamps.map(|t| t.0),
            last_timestamp_ms: profile.timestamps.map(|t| t.1),
            stopped_early: None,
            per_iteration,
        }
    }
}

impl RankSet {
    /// Compares the ranks: who stopped early, the straggler and what makes the difference.
    pub fn new(
        source: String,
        launcher: String,
        mut ranks: Vec<(RankView, &Profile)>,
        unlabelled_lines: u64,
    ) -> RankSet {
        ranks.sort_by_key(|(r, _)| r.rank);
        mark_stopped_early(&mut ranks);
        let imbalance = imbalance(&ranks);
        let ranks: Vec<RankView> = ranks.into_iter().map(|(r, _)| r).collect();
        let nodes = crate::ranks::nodes::group(
            &ranks
                .iter()
                .map(|r| (r.rank, r.node.as_deref()))
                .collect::<Vec<_>>(),
        );
        RankSet {
            source,
            launcher,
            spread: crate::ranks::spread::RankSpread::of(
                &ranks
                    .iter()
                    .map(|r| {
                        let per_iteration = [
                            r.time_ms_per_iteration,
                            r.wall_ms_per_iteration,
                            r.outside_ms_per_iteration,
                        ];
                        (r.rank, per_iteration)
                    })
                    .collect::<Vec<_>>(),
            ),
            ranks,
            nodes: if nodes.len() > 1 { nodes } else { Vec::new() },
            imbalance,
            unlabelled_lines,
        }
    }
}

/// A rank with fewer iterations than the others, or whose lines end well before theirs (by
/// more than one iteration's wall time, or 10 % of the run without iterations).
fn mark_stopped_early(ranks: &mut [(RankView, &Profile)]) {
    let most = ranks.iter().filter_map(|(r, _)| r.iterations).max();
    let end = ranks
        .iter()
        .filter_map(|(r, _)| r.last_timestamp_ms)
        .reduce(f64::max);
    let start = ranks
        .iter()
        .filter_map(|(r, _)| r.first_timestamp_ms)
        .reduce(f64::min);
    for (r, _) in ranks.iter_mut() {
        let fewer = match (r.iterations, most) {
            (Some(n), Some(m)) if n < m => Some(format!("{n} iterations against {m}")),
            (None, Some(m)) => Some(format!("no whole iteration against {m}")),
            _ => None,
        };
        let slack = r
            .wall_ms_per_iteration
            .or_else(|| start.zip(end).map(|(a, b)| (b - a) * 0.1))
            .unwrap_or(f64::INFINITY);
        let ended = match (r.last_timestamp_ms, end, start) {
            (Some(l), Some(e), Some(s)) if e - l > slack => Some(format!(
                "its last line at {:.0} ms of the run's {:.0} ms",
                l - s,
                e - s
            )),
            _ => None,
        };
        r.stopped_early = match (fewer, ended) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
    }
}

fn imbalance(ranks: &[(RankView, &Profile)]) -> Option<Imbalance> {
    // Ranks that stopped early are not compared: their time is short because they stopped.
    let mut live: Vec<&(RankView, &Profile)> = ranks
        .iter()
        .filter(|(r, _)| r.stopped_early.is_none())
        .collect();
    if live.len() < 2 {
        return None;
    }
    live.sort_by(|a, b| load_of(&a.0).total_cmp(&load_of(&b.0)));
    let median = live[(live.len() - 1) / 2];
    let slow = live[live.len() - 1];
    let m = load_of(&median.0);
    let s = load_of(&slow.0);
    let keys = [GroupKey::PrimKind, GroupKey::PropKind];
    let per_iter = |p: &Profile, v: &RankView| {
        let b = breakdown(p, &keys, true);
        let n = v.iterations.filter(|n| *n > 0).unwrap_or(1) as f64;
        b.rows
            .into_iter()
            .map(|r| (r.values.join(" "), r.time_ms() / n))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let mb = per_iter(median.1, &median.0);
    let causes = |v: &(RankView, &Profile), keep: usize| -> Vec<RankDifference> {
        let sb = per_iter(v.1, &v.0);
        let mut differences: Vec<RankDifference> = sb
            .keys()
            .chain(mb.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|g| {
                let (a, b) = (
                    sb.get(g).copied().unwrap_or(0.0),
                    mb.get(g).copied().unwrap_or(0.0),
                );
                RankDifference {
                    group: g.clone(),
                    straggler_ms_per_iteration: a,
                    median_ms_per_iteration: b,
                    difference_ms_per_iteration: a - b,
                }
            })
            .filter(|d| d.difference_ms_per_iteration > 0.0)
            .collect();
        differences.sort_by(|a, b| {
            b.difference_ms_per_iteration
                .total_cmp(&a.difference_ms_per_iteration)
        });
        differences.truncate(keep);
        differences
    };
    let differences = causes(slow, 5);
    // Ranks within 1 % of the median are not slow: listing them would only name ties.
    let slowest = live
        .iter()
        .rev()
        .take(SLOWEST)
        .enumerate()
        .filter(|(i, v)| *i == 0 || load_of(&v.0) > m * 1.01)
        .map(|(_, v)| {
            let load = load_of(&v.0);
            SlowRank {
                rank: v.0.rank,
                node: v.0.node.clone(),
                ms_per_iteration: load,
                ratio: if m > 0.0 { load / m } else { 1.0 },
                differences: causes(v, 3),
            }
        })
        .collect();
    Some(Imbalance {
        straggler: slow.0.rank,
        straggler_ms_per_iteration: s,
        median_ms_per_iteration: m,
        ratio: if m > 0.0 { s / m } else { 1.0 },
        differences,
        mini_batch: match (slow.0.mini_batch, median.0.mini_batch) {
            (Some(a), Some(b)) if a != b => Some((a, b)),
            _ => None,
        },
        slowest,
        straggler_node: slow.0.node.clone(),
        slow_node: crate::ranks::nodes::slow_node(
            &live
                .iter()
                .filter_map(|(r, _)| Some((r.rank, r.node.as_deref()?, load_of(r))))
                .collect::<Vec<_>>(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iteration_times_from_markers_and_timestamps() {
        // Hand-made: iteration 0 starts at t=1000 with 2 ms of oneDNN work, iteration 1 at
        // t=1010 with 3 ms; nothing ends iteration 1, so its wall time is unknown.
        let log = b"profilednn,iteration,0\n\
            onednn_verbose,v1,1000,primitive,exec,cpu,eltwise,jit,forward_training,data:f32::blocked:a::f0,,alg:eltwise_relu,8,1.5\n\
            loss 0.3\n\
            onednn_verbose,v1,1004,primitive,exec,cpu,eltwise,jit,forward_training,data:f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n\
            profilednn,iteration,1\n\
            onednn_verbose,v1,1010,primitive,exec,cpu,eltwise,jit,forward_training,data:f32::blocked:a::f0,,alg:eltwise_relu,8,3\n";
        let t = iteration_times(log);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].onednn_ms, 2.0);
        assert_eq!(t[0].wall_ms, Some(10.0));
        assert_eq!(t[0].outside_ms, Some(8.0));
        assert_eq!(t[1].onednn_ms, 3.0);
        assert_eq!(t[1].wall_ms, None);
    }
}
