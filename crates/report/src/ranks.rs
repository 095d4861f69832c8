//! The ranks of a multi-rank run side by side, per iteration, and the straggler.

use crate::terminal::ms;
use profilednn_analysis::ranks::RankSet;
use std::fmt::Write;

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), ms)
}

pub fn render(sets: &[RankSet]) -> String {
    let mut out = String::new();
    for set in sets {
        render_set(&mut out, set);
    }
    out
}

fn render_set(out: &mut String, set: &RankSet) {
    let _ = writeln!(
        out,
        "\nRanks of {} ({} ranks, told apart by {}; the tables above merge them, one column per rank)",
        set.source,
        set.ranks.len(),
        set.launcher
    );
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
    for r in &set.ranks {
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
    let longest = set.ranks.iter().map(|r| r.per_iteration.len()).max();
    if let Some(n) = longest.filter(|n| *n > 0) {
        let _ = writeln!(
            out,
            "\n  Per iteration and rank: oneDNN ms / wall ms / outside oneDNN ms (wall from timestamps; the last iteration has no end marker)"
        );
        let mut head = format!("  {:>5}", "iter");
        for r in &set.ranks {
            let _ = write!(head, "  {:>26}", format!("rank {}", r.rank));
        }
        let _ = writeln!(out, "{head}");
        for i in 0..n {
            let mut line = format!("  {i:>5}");
            for r in &set.ranks {
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
    for r in &set.ranks {
        if let Some(why) = &r.stopped_early {
            let _ = writeln!(out, "  Rank {} stopped early: {why}", r.rank);
        }
    }
    if set.unlabelled_lines > 0 {
        let _ = writeln!(
            out,
            "  {} verbose lines carry no rank label: profiled on their own, in no rank",
            set.unlabelled_lines
        );
    }
    if let Some(im) = &set.imbalance {
        let _ = writeln!(
            out,
            "\n  Straggler: rank {} with {} ms of oneDNN time per iteration, {:.2}× the median rank's {} ms",
            im.straggler,
            ms(im.straggler_ms_per_iteration),
            im.ratio,
            ms(im.median_ms_per_iteration)
        );
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
    }
}
