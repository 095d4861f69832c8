//! `profilednn replay`'s terminal summary. It lives with the other renderers so that the CLI only
//! runs the replay and writes its results: what the summary shows can be tested without oneDNN,
//! from a [`Replay`] read back from its JSON.

use profilednn_replay::{Replay, ReplayResult, SkipReason};
use std::fmt::Write;

/// The summary printed after a replay. `all_ms` is the logged time of every problem of the log
/// (coverage is of the whole log, `--top` or not); `results_file` is where the results were
/// written, which the summary points at.
pub fn render(
    replay: &Replay,
    all_ms: &[f64],
    results_file: &str,
    withheld: Option<&Withheld>,
) -> String {
    let mut out = render_onednn(replay, all_ms, results_file, withheld);
    if let Some(f) = &replay.framework {
        out.push('\n');
        out.push_str(&crate::step_text::render(f));
    }
    out
}

/// The oneDNN part of the summary: the problems replayed, or the what-if's rewritten iteration.
/// Ratios not headlined: the log's timings look polluted (`timings-polluted`), and these
/// problems' logged calls are the ones that ran far apart.
pub struct Withheld<'a> {
    pub reason: &'a str,
    pub keys: &'a std::collections::HashSet<String>,
}

fn render_onednn(
    replay: &Replay,
    all_ms: &[f64],
    results_file: &str,
    withheld: Option<&Withheld>,
) -> String {
    let mut out = String::new();
    let done: Vec<_> = replay
        .results
        .iter()
        .filter(|r| r.measurement.is_some())
        .collect();
    let skipped: Vec<_> = replay
        .results
        .iter()
        .filter(|r| r.skipped.is_some())
        .collect();
    if replay.what_if.is_some() {
        render_what_if(&mut out, replay, &done, &skipped, results_file);
        return out;
    }
    let mismatched = done
        .iter()
        .filter(|r| r.implementation_matches == Some(false))
        .count();
    let _ = writeln!(
        out,
        "{}",
        coverage_line(all_ms, &replay.results, &replay.onednn, &replay.library)
    );
    let _ = writeln!(
        out,
        "  {mismatched} picked another implementation than the log (listed in {results_file})"
    );
    let _ = writeln!(
        out,
        "\n{:>10} {:>10} {:>7}  problem",
        "log ms", "here ms", "ratio"
    );
    for r in done.iter().take(12) {
        let Some(m) = r.measurement.as_ref() else {
            continue;
        };
        let per_call = r.log_time_ms / r.calls.max(1) as f64;
        let ratio = if withheld.is_some_and(|w| w.keys.contains(&r.key)) {
            format!("{:>7}", "-")
        } else {
            format!("{:>6.2}x", per_call / m.median_ms.max(1e-9))
        };
        let _ = writeln!(
            out,
            "{per_call:>10.3} {:>10.3} {ratio}  {} {} {}{}",
            m.median_ms,
            r.prim_kind,
            r.prop_kind,
            r.shapes,
            if r.implementation_matches == Some(false) {
                format!(
                    "  [here {} vs log {}]",
                    m.implementation,
                    r.log_implementations.join(",")
                )
            } else {
                String::new()
            }
        );
    }
    if let Some(w) = withheld {
        let n = done
            .iter()
            .take(12)
            .filter(|r| w.keys.contains(&r.key))
            .count();
        if n > 0 {
            let _ = writeln!(
                out,
                "  ratio withheld (-) for {n} problem(s) whose logged calls ran far apart: {}",
                w.reason
            );
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nNot replayed ({}):", skipped.len());
        for (why, n) in SkipReason::tally(skipped.iter().filter_map(|r| r.skipped.as_ref())) {
            let _ = writeln!(out, "  {n:>4} × {why}");
        }
    }
    out
}

/// A what-if replay's summary: the rewrite, its assumptions, the time per iteration here and
/// the problems not replayed.
fn render_what_if(
    out: &mut String,
    replay: &Replay,
    done: &[&ReplayResult],
    skipped: &[&ReplayResult],
    results_file: &str,
) {
    let Some(w) = &replay.what_if else {
        return;
    };
    let _ = writeln!(
        out,
        "What-if `{}`: {} calls per iteration logged, {} rewritten ({} removed, {} added)",
        w.transform, w.logged_calls, w.calls, w.removed, w.added
    );
    for a in &w.assumptions {
        let _ = writeln!(out, "  assumed: {a}");
    }
    let per_iteration: f64 = done
        .iter()
        .map(|r| r.measurement.as_ref().map_or(0.0, |m| m.median_ms) * r.calls as f64)
        .sum();
    let _ = writeln!(
        out,
        "  {} of {} problems replayed with oneDNN {}: {per_iteration:.3} ms per iteration here (`profilednn project LOG --replay {results_file}` sets it against the log)",
        done.len(),
        replay.results.len(),
        replay.onednn,
    );
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nNot replayed ({}):", skipped.len());
        for r in skipped {
            let _ = writeln!(
                out,
                "  {} × {} {} {}: {}",
                r.calls,
                r.prim_kind,
                r.prop_kind,
                r.shapes,
                r.skipped
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default()
            );
        }
    }
}

/// The summary's first line: how many of the log's problems were measured, and their share of
/// the whole log's oneDNN time (problems left out by `--top`, or skipped, count as not replayed).
fn coverage_line(all_ms: &[f64], results: &[ReplayResult], onednn: &str, library: &str) -> String {
    if all_ms.is_empty() {
        // A log without a primitive (replayed for its trace's whole step).
        return format!(
            "The log holds no oneDNN primitive: nothing replayed with oneDNN {onednn} ({library})"
        );
    }
    let done: Vec<_> = results.iter().filter(|r| r.measurement.is_some()).collect();
    let replayed_ms: f64 = done.iter().map(|r| r.log_time_ms).sum();
    let total_ms: f64 = all_ms.iter().sum();
    format!(
        "Replayed {} of {} problems with oneDNN {onednn} ({library}): {:.1}% of the log's oneDNN time ({:.1} of {:.1} ms)",
        done.len(),
        all_ms.len(),
        if total_ms > 0.0 {
            replayed_ms / total_ms * 100.0
        } else {
            0.0
        },
        replayed_ms,
        total_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed replay of `fixtures/advice/bf16_without_bf16_units.log`: the summary counts
    /// its results independently of the renderer (from the JSON's own fields).
    #[test]
    fn the_summary_counts_what_the_results_file_holds() {
        let replay: Replay = serde_json::from_str(include_str!(
            "../../../fixtures/replay/bf16_without_bf16_units.replay.json"
        ))
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(include_str!(
            "../../../fixtures/replay/bf16_without_bf16_units.replay.json"
        ))
        .unwrap();
        let results = v["results"].as_array().unwrap();
        let measured = results
            .iter()
            .filter(|r| !r["measurement"].is_null())
            .count();
        let logged: Vec<f64> = results
            .iter()
            .map(|r| r["log_time_ms"].as_f64().unwrap())
            .collect();
        let text = render(&replay, &logged, "r.json", None);
        let first = text.lines().next().unwrap();
        assert!(
            first.starts_with(&format!(
                "Replayed {measured} of {} problems with oneDNN",
                results.len()
            )),
            "{first}"
        );
        assert!(text.contains("(listed in r.json)"), "{text}");
    }
}
