//! The ranks of a multi-rank run side by side, per iteration, and the straggler.

use crate::terminal::{ms, RankColumns};
use profilednn_analysis::ranks::spread::Spread;
use profilednn_analysis::ranks::{RankSet, RankView};
use std::fmt::Write;

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), ms)
}

/// The ranks of each multi-rank log: up to [`crate::terminal::AUTO_COLUMNS`] ranks (or those
/// `columns` asks for) one by one, more as their distribution, the slowest ranks and why,
/// and the ranks that stopped early.
///
/// No line is wider than `width` characters: the per-iteration table comes in blocks of as
/// many ranks as fit, and the sentences are folded ([`crate::terminal::fit`]).
pub fn render(sets: &[RankSet], columns: &RankColumns, width: usize) -> String {
    let mut out = String::new();
    for set in sets {
        render_set(&mut out, set, columns, width);
    }
    crate::terminal::fit(&out, width)
}

/// How many ranks that stopped early are named one by one (JSON lists every one).
const STOPPED_LISTED: usize = 10;

fn render_set(out: &mut String, set: &RankSet, columns: &RankColumns, width: usize) {
    let n = set.ranks.len();
    let shown: Vec<&RankView> = set
        .ranks
        .iter()
        .filter(|r| columns.shows_rank(r.rank, n))
        .collect();
    let _ = writeln!(
        out,
        "\nRanks of {} ({n} ranks, told apart by {}; the tables above merge them{})",
        set.source,
        set.launcher,
        if shown.len() == n {
            ", one column per rank"
        } else {
            ""
        }
    );
    render_nodes(out, set);
    if shown.len() < n {
        render_spread(out, set);
    }
    if !shown.is_empty() {
        render_each(out, &shown, width);
    }
    let stopped: Vec<&RankView> = set
        .ranks
        .iter()
        .filter(|r| r.stopped_early.is_some())
        .collect();
    for r in stopped.iter().take(STOPPED_LISTED) {
        if let Some(why) = &r.stopped_early {
            let _ = writeln!(out, "  Rank {} stopped early: {why}", r.rank);
        }
    }
    if stopped.len() > STOPPED_LISTED {
        let _ = writeln!(
            out,
            "  … and {} more ranks stopped early (every one is in --format json)",
            stopped.len() - STOPPED_LISTED
        );
    }
    if set.unlabelled_lines > 0 {
        let _ = writeln!(
            out,
            "  {} verbose lines carry no rank label: profiled on their own, in no rank",
            set.unlabelled_lines
        );
    }
    render_imbalance(out, set, shown.len() < n);
}

/// How many nodes are named one by one (JSON lists every one).
const NODES_LISTED: usize = 8;

/// The nodes and their ranks, when known.
fn render_nodes(out: &mut String, set: &RankSet) {
    if set.nodes.is_empty() {
        return;
    }
    let named: Vec<String> = set
        .nodes
        .iter()
        .take(NODES_LISTED)
        .map(|n| {
            format!(
                "{} (ranks {})",
                n.node,
                profilednn_analysis::ranks::nodes::rank_ranges(&n.ranks)
            )
        })
        .collect();
    let more = set.nodes.len().saturating_sub(NODES_LISTED);
    let _ = writeln!(
        out,
        "  {} nodes: {}{}",
        set.nodes.len(),
        named.join(", "),
        if more > 0 {
            format!(" … and {more} more (every one in --format json)")
        } else {
            String::new()
        }
    );
}

/// Whether the straggler's node is slow as a whole (the machine) or only the straggler is (its
/// own work), when nodes are known.
fn render_node_verdict(
    out: &mut String,
    set: &RankSet,
    im: &profilednn_analysis::ranks::Imbalance,
) {
    if set.nodes.is_empty() {
        return;
    }
    if let Some(s) = &im.slow_node {
        let _ = writeln!(
            out,
            "  Slow node: {}: every one of its {} ranks is slow, its fastest {} ms per iteration {:.2}× the other nodes' median rank's {} ms: the machine (its CPU, memory, another job on it), not the ranks' work{}",
            s.node,
            s.ranks.len(),
            ms(s.fastest_ms_per_iteration),
            s.ratio,
            ms(s.others_median_ms_per_iteration),
            if s.ranks.len() == 1 {
                " (one rank per node: a slow rank and a slow node look the same)"
            } else {
                ""
            }
        );
    } else if let Some(node) = &im.straggler_node {
        let _ = writeln!(
            out,
            "  A slow rank, not a slow node: rank {} is on {node}, whose other ranks are not all slow: the rank's own work or placement",
            im.straggler
        );
    }
}

/// The ranks' figures per iteration as distributions, and their threads and mini-batches.
fn render_spread(out: &mut String, set: &RankSet) {
    let _ = writeln!(
        out,
        "  {:<28} {:>18} {:>11} {:>11} {:>18}",
        "per iteration, over ranks", "min (rank)", "median", "p95", "max (rank)"
    );
    let row = |out: &mut String, name: &str, s: Option<Spread>| {
        let Some(s) = s else {
            let _ = writeln!(out, "  {name:<28} {:>18}", "-");
            return;
        };
        let _ = writeln!(
            out,
            "  {name:<28} {:>18} {:>11} {:>11} {:>18}",
            format!("{} ({})", ms(s.min), s.min_rank),
            ms(s.median),
            ms(s.p95),
            format!("{} ({})", ms(s.max), s.max_rank)
        );
    };
    row(out, "oneDNN ms", set.spread.onednn_ms);
    row(out, "wall ms", set.spread.wall_ms);
    row(out, "outside oneDNN ms", set.spread.outside_ms);
    let counted = |f: fn(&RankView) -> Option<u64>| {
        let mut c: std::collections::BTreeMap<Option<u64>, usize> = Default::default();
        for r in &set.ranks {
            *c.entry(f(r)).or_default() += 1;
        }
        c.iter()
            .map(|(v, k)| {
                let v = v.map_or_else(|| "unknown".to_string(), |v| v.to_string());
                format!("{v} ({k} ranks)")
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "  threads: {}; mini-batch: {}",
        counted(|r| r.threads.map(u64::from)),
        counted(|r| r.mini_batch)
    );
}

/// Each rank's figures in a row, and each iteration in a column per rank.
fn render_each(out: &mut String, ranks: &[&RankView], width: usize) {
    let _ = writeln!(
        out,
        "  {:>5} {:>7} {:>11} {:>13} {:>12} {:>14} {:>7} {:>6}",
        "rank",
        "calls",
        "oneDNN ms",
        "oneDNN ms/it",
        "wall ms/it",
        "outside ms/it",
        "threads",
        "mb"
    );
    for r in ranks {
        let _ = writeln!(
            out,
            "  {:>5} {:>7} {:>11} {:>13} {:>12} {:>14} {:>7} {:>6}",
            r.rank,
            r.calls,
            ms(r.total_time_ms),
            opt(r.time_ms_per_iteration),
            opt(r.wall_ms_per_iteration),
            opt(r.outside_ms_per_iteration),
            r.threads.map_or_else(|| "-".into(), |t| t.to_string()),
            r.mini_batch.map_or_else(|| "-".into(), |t| t.to_string()),
        );
    }
    let longest = ranks.iter().map(|r| r.per_iteration.len()).max();
    if let Some(n) = longest.filter(|n| *n > 0) {
        let _ = writeln!(
            out,
            "\n  Per iteration and rank: oneDNN ms / wall ms / outside oneDNN ms (wall from timestamps; the last iteration has no end marker)"
        );
        // Each cell is 28 characters: as many ranks as fit the width per block.
        let per_block = (width.saturating_sub(7) / 28).max(1);
        for block in ranks.chunks(per_block) {
            let mut head = format!("  {:>5}", "iter");
            for r in block {
                let _ = write!(head, "  {:>26}", format!("rank {}", r.rank));
            }
            let _ = writeln!(out, "{head}");
            for i in 0..n {
                let mut line = format!("  {i:>5}");
                for r in block {
                    let cell = match r.per_iteration.get(i) {
                        Some(t) => format!(
                            "{} / {} / {}",
                            ms(t.onednn_ms),
                            opt(t.wall_ms),
                            opt(t.outside_ms)
                        ),
                        None => "(stopped)".into(),
                    };
                    let _ = write!(line, "  {cell:>26}");
                }
                let _ = writeln!(out, "{line}");
            }
        }
    }
}

/// The straggler and what it does more than the median rank; with `slowest`, the next
/// slowest ranks too, each with the groups it spends more time in.
fn render_imbalance(out: &mut String, set: &RankSet, slowest: bool) {
    if let Some(im) = &set.imbalance {
        let _ = writeln!(
            out,
            "\n  Straggler: rank {} with {} ms of oneDNN time per iteration, {:.2}× the median rank's {} ms",
            im.straggler,
            ms(im.straggler_ms_per_iteration),
            im.ratio,
            ms(im.median_ms_per_iteration)
        );
        render_node_verdict(out, set, im);
        if let Some((s, m)) = im.mini_batch {
            let _ = writeln!(
                out,
                "  Its problems have mini-batch {s} against the median rank's {m}"
            );
        }
        for d in &im.differences {
            let _ = writeln!(
                out,
                "    {:<36} +{} ms/iteration ({} against {})",
                d.group,
                ms(d.difference_ms_per_iteration),
                ms(d.straggler_ms_per_iteration),
                ms(d.median_ms_per_iteration)
            );
        }
        if slowest && im.slowest.len() > 1 {
            let _ = writeln!(
                out,
                "\n  Slowest ranks (oneDNN ms per iteration; × the median rank's; the groups each spends more time in, ms/iteration):"
            );
            for r in &im.slowest {
                let causes: Vec<String> = r
                    .differences
                    .iter()
                    .map(|d| format!("{} +{}", d.group, ms(d.difference_ms_per_iteration)))
                    .collect();
                let rank = match &r.node {
                    Some(n) => format!("{} ({n})", r.rank),
                    None => r.rank.to_string(),
                };
                let _ = writeln!(
                    out,
                    "    rank {:<6} {:>10} {:>6.2}×  {}",
                    rank,
                    ms(r.ms_per_iteration),
                    r.ratio,
                    if causes.is_empty() {
                        "no group above the median rank's".to_string()
                    } else {
                        causes.join(", ")
                    }
                );
            }
        }
    }
}
