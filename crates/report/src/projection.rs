//! `profilednn project`'s terminal view of a [`Projection`]: the totals, the what-if's
//! assumptions and a table by kind and propagation. The JSON view is the [`Projection`] itself
//! (`docs/project-json.md`).

use profilednn_analysis::scale::Scale;
use profilednn_project::project::headline::HeadlineBasis;
use profilednn_project::project::Projection;
use std::fmt::Write;

/// The projection as text, one line per figure and a row per kind and propagation.
pub fn render(pr: &Projection) -> String {
    render_withheld(pr, None)
}

/// [`render`], with the oneDNN headline's change withheld for `polluted`'s reason: the log's
/// timings look polluted (`timings-polluted`), so a change against them is noise.
pub fn render_withheld(pr: &Projection, polluted: Option<&str>) -> String {
    let mut out = String::new();
    let unit = if pr.scale == Scale::PerIteration {
        "ms per iteration"
    } else {
        "ms in all"
    };
    let _ = writeln!(out, "Projection of {} onto {}", pr.source, pr.target);
    if let Some(v) = &pr.replay_onednn {
        let log = if pr.log_onednn.is_empty() {
            "an unknown oneDNN (no version line in the log)".to_string()
        } else {
            pr.log_onednn.join(", ")
        };
        let changed: usize = pr.groups.iter().map(|g| g.implementation_changed).sum();
        let _ = writeln!(
            out,
            "  log recorded with {log}; replayed with oneDNN {v} ({} replay); {changed} problem(s) ran another implementation here{}",
            pr.replay_mode.map_or("isolated", profilednn_replay::Mode::as_str),
            if changed > 0 { " (per group below)" } else { "" }
        );
    }
    if let Some(g) = &pr.version_gap {
        let _ = writeln!(
            out,
            "  oneDNN versions differ (recorded {}, replayed {}): gap assumed {:+.0} %, {}",
            g.recorded_onednn,
            g.replayed_onednn,
            g.assumed_change * 100.0,
            g.why
        );
    }
    if let Some(a) = &pr.replay_allocation {
        let _ = writeln!(out, "  allocation: {a}");
    }
    if let Some(st) = &pr.step {
        out.push_str(&whole_step(st, pr, polluted));
    }
    if let Some(w) = &pr.what_if {
        let _ = writeln!(out, "  what-if: {}", w.transform);
        for a in &w.assumptions {
            let _ = writeln!(out, "    assumed: {a}");
        }
        let _ = writeln!(
            out,
            "    calls per iteration: {} logged → {} ({} removed, {} added); autocast casts {:.3} {unit} (outside oneDNN in PyTorch)",
            w.logged_calls_per_iteration,
            w.projected_calls_per_iteration,
            w.removed_calls,
            w.added_calls,
            w.autocast_casts_ms
        );
        for n in &w.not_replayed {
            let _ = writeln!(
                out,
                "    not replayed (logged time of the same problem, else 0): {n}"
            );
        }
        if w.unavailable_here_calls > 0 {
            let _ = writeln!(
                out,
                "    NOT AN ESTIMATE HERE: {} of {} calls per iteration have no bf16 implementation in oneDNN on this CPU; \
                 the framework would run them outside oneDNN (PyTorch: its own, much slower kernels), so the projected \
                 time below counts them at their logged f32 time — project on a CPU with AVX-512 (avx512_core) or AVX2-VNNI-2",
                w.unavailable_here_calls, w.projected_calls_per_iteration
            );
        }
    }
    let change = match polluted {
        Some(why) => format!("change withheld: {why}"),
        None => format!(
            "{:+.1}%",
            (pr.projected_onednn_ms / pr.logged_onednn_ms.max(1e-12) - 1.0) * 100.0
        ),
    };
    // With the whole step as the headline, the oneDNN figure is a part of it, and the step of
    // oneDNN plus the rest carried over is not given: one step, not two that disagree.
    let whole = pr.headline.basis == HeadlineBasis::WholeStep;
    let _ = writeln!(
        out,
        "  {}: {:.3} → {:.3} {unit} ({change}{})",
        if whole { ONEDNN_PART } else { "oneDNN" },
        pr.logged_onednn_ms,
        pr.projected_onednn_ms,
        pr.replay_dispersion
            .map(|d| format!("; replay ±{:.1}%", d * 100.0))
            .unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "  (logged oneDNN time with cold starts: {:.3} {unit})",
        pr.logged_onednn_raw_ms
    );
    if let (Some(r), Some(l), Some(p), false) = (
        pr.residual_ms,
        pr.logged_total_ms,
        pr.projected_total_ms,
        whole,
    ) {
        let _ = writeln!(out, "  outside oneDNN (carried over): {r:.3} {unit}");
        let _ = writeln!(out, "  training step: {l:.3} → {p:.3} {unit}");
    }
    let cov: Vec<String> = pr
        .coverage
        .iter()
        .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
        .collect();
    let _ = writeln!(out, "  logged oneDNN time by method: {}", cov.join(", "));
    let _ = writeln!(
        out,
        "\n{:<24} {:<18} {:>12} {:>12} {:>8} {:>13}",
        "kind", "prop", "logged", "projected", "change", "impl changed"
    );
    for g in &pr.groups {
        // A group only the what-if has (autocast's casts, removed reorders) has no ratio.
        let change = if g.logged_ms > 0.0 && g.projected_ms > 0.0 {
            format!("{:>+7.1}%", (g.projected_ms / g.logged_ms - 1.0) * 100.0)
        } else if g.logged_ms > 0.0 {
            "removed".into()
        } else {
            "added".into()
        };
        let _ = writeln!(
            out,
            "{:<24} {:<18} {:>12.3} {:>12.3} {:>8} {:>13}",
            g.prim_kind, g.prop_kind, g.logged_ms, g.projected_ms, change, g.implementation_changed
        );
    }
    let _ = writeln!(out, "\nMethod: {}", pr.method);
    out
}

/// How the oneDNN-only figure is named under a whole-step headline.
const ONEDNN_PART: &str = "of which oneDNN (the log's primitives replayed alone)";

/// The whole step (a replay with `--torch-trace`): the headline, with the oneDNN-only figure as
/// its part, then the step per phase and per family.
fn whole_step(
    st: &profilednn_project::project::step::StepProjection,
    pr: &Projection,
    polluted: Option<&str>,
) -> String {
    let mut out = String::new();
    let pct = |l: f64, p: f64| {
        if l > 0.0 {
            format!("{:+.1}%", (p / l - 1.0) * 100.0)
        } else {
            "-".into()
        }
    };
    let _ = writeln!(
        out,
        "\nWhole step, the headline (iteration {} of the trace; framework ops replayed through PyTorch {} at {} \
         thread(s){}): {:.3} → {:.3} ms ({})",
        st.iteration,
        st.torch,
        st.threads,
        st.precision
            .as_deref()
            .map(|p| format!(", {p} what-if"))
            .unwrap_or_default(),
        st.logged_step_ms,
        st.projected_step_ms,
        pct(st.logged_step_ms, st.projected_step_ms)
    );
    if let Some(o) = &pr.headline.of_which_onednn {
        let _ = writeln!(
            out,
            "  {ONEDNN_PART}: {:.3} → {:.3} ms ({})",
            o.logged_ms,
            o.projected_ms,
            match polluted {
                Some(why) => format!("change withheld: {why}"),
                None => pct(o.logged_ms, o.projected_ms),
            }
        );
    }
    let _ = writeln!(
        out,
        "  {:.0}% of the step replayed; {:.3} ms outside the ops and {:.3} ms of ops not \
         replayable carried over as logged{}",
        st.replayed_share * 100.0,
        st.outside_ops_ms,
        st.carried_over_ms,
        if st.added_ms > 0.0 {
            format!("; {:.3} ms in the casts the what-if adds", st.added_ms)
        } else {
            String::new()
        }
    );
    for (title, parts) in [
        ("phase", &st.by_phase),
        ("family", &st.by_family),
        ("runs in", &st.by_runs_in),
    ] {
        let _ = writeln!(
            out,
            "  {title:<16} {:>10} {:>10} {:>8}",
            "logged ms", "here ms", "change"
        );
        for (k, p) in parts {
            let _ = writeln!(
                out,
                "  {k:<16} {:>10.3} {:>10.3} {:>8}",
                p.logged_ms,
                p.projected_ms,
                pct(p.logged_ms, p.projected_ms)
            );
        }
    }
    out.push('\n');
    out
}
