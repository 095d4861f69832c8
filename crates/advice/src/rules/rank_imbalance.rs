//! `rank-imbalance`: one rank does more oneDNN work per iteration than the others.
//!
//! In synchronous data-parallel training every all-reduce waits for the slowest rank, so the
//! step takes the straggler's time and the other ranks idle for the difference. The median
//! (not the fastest) rank is the reference: one fast rank is not what the others wait for.

use super::*;
use profilednn_analysis::ranks::nodes::SlowNode;
use profilednn_analysis::summary::LogTotals;

pub const ID: &str = "rank-imbalance";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let logs = &ev.summary.per_log;
    if logs.len() < 2 {
        return Err(
            "a single rank (not applicable: give a multi-rank log or one log per rank)".into(),
        );
    }
    let per_iter = logs.iter().all(|l| l.per_iteration_time_ms.is_some());
    let load = |l: &LogTotals| {
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
    let causes = causes(
        ev,
        order[order.len() - 1],
        order[(order.len() - 1) / 2],
        per_iter,
    );
    let (straggler_node, on_slow_node, node_text) = node_verdict(ev, slow, &load);
    let because = match &causes[..] {
        [] => String::new(),
        c => format!(
            "; it spends more time in {}",
            c.iter()
                .map(|(g, d)| format!("{g} (+{d:.3} {unit})"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Ok(finding(
        ev,
        ID,
        format!(
            "{} is the straggler: {s:.3} {unit} of oneDNN time, {ratio:.2}× the median rank's {m:.3}{because}{node_text}; every all-reduce waits for it",
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
            ("straggler_node", json!(straggler_node)),
            ("slow_node", json!(on_slow_node.as_ref())),
            (
                "causes",
                json!(causes
                    .iter()
                    .map(|(g, d)| json!({ "group": g, "difference": d }))
                    .collect::<Vec<_>>()),
            ),
        ]),
        Some(gain),
        "the straggler's oneDNN time above the median rank's, which every rank waits for",
        advice(on_slow_node.is_some()),
    ))
}

/// With nodes known, whether the straggler's whole node is slow (the machine) or the straggler
/// alone (its work): the straggler's node, its node when slow as a whole, and the clause that
/// says which.
fn node_verdict<'a>(
    ev: &'a Evidence,
    slow: &LogTotals,
    load: &dyn Fn(&LogTotals) -> f64,
) -> (Option<&'a str>, Option<SlowNode>, String) {
    let logs = &ev.summary.per_log;
    let node_of = |source: &str| {
        ev.nodes
            .iter()
            .find(|(s, _)| s == source)
            .map(|(_, n)| n.as_str())
    };
    let slow_node = profilednn_analysis::ranks::nodes::slow_node(
        &logs
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((i as u32, node_of(&l.source)?, load(l))))
            .collect::<Vec<_>>(),
    );
    let straggler_node = node_of(&slow.source);
    let on_slow_node = slow_node.filter(|n| Some(n.node.as_str()) == straggler_node);
    let node_text = match (straggler_node, on_slow_node.as_ref()) {
        (Some(_), Some(n)) => format!(
            "; its node {} is slow as a whole: every one of its {} ranks, the fastest {:.2}× the other nodes' median rank{} — the machine, not the rank's work",
            n.node,
            n.ranks.len(),
            n.ratio,
            if n.ranks.len() == 1 {
                " (one rank per node: a slow rank and a slow node look the same)"
            } else {
                ""
            }
        ),
        (Some(node), None) => format!(
            "; a slow rank, not a slow node: the other ranks on {node} are not all slow"
        ),
        (None, _) => String::new(),
    };
    (straggler_node, on_slow_node, node_text)
}

/// What to do: about the slow node when the straggler's whole node is slow, else about the
/// ranks' work.
fn advice(on_slow_node: bool) -> &'static str {
    if on_slow_node {
        "Look at the slow node rather than the ranks: a slower CPU or memory than the other \
         nodes, another job on it, a lower clock (power or thermal limits), or fewer cores \
         than its ranks were given; move the job off it or give it fewer ranks. `report` \
         lists the nodes and their ranks."
    } else {
        "Give every rank the same work: the same mini-batch per rank (DistributedSampler with \
         drop_last, equal local batch sizes), the same threads and cores per rank \
         (OMP_NUM_THREADS, pinning), and no other load on the straggler's cores. `report` \
         lists the primitive groups the straggler spends more time in."
    }
}

/// The primitive groups (kind and propagation) log `slow` spends more time in than log
/// `median`, largest first, at most three: (group, difference), per iteration when
/// `per_iter`. From the summary's per-log columns, so at any number of ranks.
fn causes(ev: &Evidence, slow: usize, median: usize, per_iter: bool) -> Vec<(String, f64)> {
    let logs = &ev.summary.per_log;
    let Some(b) = ev
        .summary
        .breakdowns
        .iter()
        .find(|b| b.name == "prim_kind,prop_kind")
    else {
        return Vec::new();
    };
    let per = |i: usize| {
        let n = logs[i].iterations.as_ref().map_or(1, |it| it.count.max(1));
        if per_iter {
            n as f64
        } else {
            1.0
        }
    };
    let mut out: Vec<(String, f64)> = b
        .rows
        .iter()
        .filter_map(|r| {
            let a = r.per_log_time_ms.get(slow)? / per(slow);
            let m = r.per_log_time_ms.get(median)? / per(median);
            (a > m).then(|| (r.values.join(" "), a - m))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out.truncate(3);
    out
}
