//! `rank-imbalance`: one rank does more oneDNN work per iteration than the others.
//!
//! In synchronous data-parallel training every all-reduce waits for the slowest rank, so the
//! step takes the straggler's time and the other ranks idle for the difference. The median
//! (not the fastest) rank is the reference: one fast rank is not what the others wait for.

use super::*;

pub const ID: &str = "rank-imbalance";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let logs = &ev.summary.per_log;
    if logs.len() < 2 {
        return Err(
            "a single rank (not applicable: give a multi-rank log or one log per rank)".into(),
        );
    }
    let per_iter = logs.iter().all(|l| l.per_iteration_time_ms.is_some());
    let load = |l: &profilednn_analysis::summary::LogTotals| {
        if per_iter {
            l.per_iteration_time_ms.unwrap_or(0.0)
        } else {
            l.total_time_ms
        }
    };
    let mut order: Vec<usize> = (0..logs.len()).collect();
    order.sort_by(|&a, &b| load(&logs[a]).total_cmp(&load(&logs[b])));
    let median = &logs[order[(order.len() - 1) / 2]];
    let slow = &logs[order[order.len() - 1]];
    let (s, m) = (load(slow), load(median));
    let ratio = if m > 0.0 { s / m } else { 1.0 };
    let unit = if per_iter { "ms per iteration" } else { "ms" };
    if ratio < t.rank_imbalance {
        return Err(format!(
            "the slowest rank has {ratio:.2}× the median rank's oneDNN time (threshold {:.2}×)",
            t.rank_imbalance
        ));
    }
    // Every other rank waits for the straggler: bringing it down to the median saves the
    // difference on the step (once per iteration, whichever rank you count it on).
    let iters = ev
        .summary
        .iterations
        .as_ref()
        .map_or(1.0, |i| i.count as f64);
    let gain = if per_iter { (s - m) * iters } else { s - m };
    Ok(finding(
        ev,
        ID,
        format!(
            "{} is the straggler: {s:.3} {unit} of oneDNN time, {ratio:.2}× the median rank's {m:.3}; every all-reduce waits for it",
            slow.source
        ),
        map(vec![
            ("straggler", json!(slow.source)),
            ("straggler_ms", json!(s)),
            ("median_rank", json!(median.source)),
            ("median_ms", json!(m)),
            ("ratio", json!(ratio)),
            ("per_iteration", json!(per_iter)),
            ("ranks", json!(logs.len())),
        ]),
        Some(gain),
        "the straggler's oneDNN time above the median rank's, which every rank waits for",
        "Give every rank the same work: the same mini-batch per rank (DistributedSampler with \
         drop_last, equal local batch sizes), the same threads and cores per rank \
         (OMP_NUM_THREADS, pinning), and no other load on the straggler's cores. `report` \
         lists the primitive groups the straggler spends more time in.",
    ))
}
