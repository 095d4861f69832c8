//! Findings as text: what was found, the evidence, the estimated gain, what to try.

use profilednn_advice::Advice;
use serde_json::Value;
use std::fmt::Write;

fn evidence_line(k: &str, v: &Value) -> Option<String> {
    match v {
        Value::Array(_) | Value::Object(_) | Value::Null => None,
        Value::Number(n) => {
            let f = n.as_f64()?;
            Some(if k.contains("share") || k == "reached" {
                format!("{k} {:.1}%", f * 100.0)
            } else if n.is_f64() {
                format!("{k} {f:.3}")
            } else {
                format!("{k} {n}")
            })
        }
        other => Some(format!("{k} {other}")),
    }
}

/// One what-if's oneDNN-only figures (`0.711 → 0.425 ms per iteration (1.68× faster),
/// replayed with …`).
fn onednn_figures(p: &profilednn_advice::Projected) -> String {
    format!(
        "{:.3} → {:.3} {} ({}), replayed with {}",
        p.logged_onednn_ms,
        p.projected_onednn_ms,
        p.unit(),
        p.headline(),
        p.replayed_with
    )
}

/// The what-ifs, one headline each (issue 52 item 6): where the whole step was projected, it
/// leads, and the oneDNN-only projection of the same change is a labelled part under it ("of
/// which oneDNN"); a change projected on oneDNN alone is listed as before.
fn projection_lines(a: &Advice) -> String {
    let mut out = String::new();
    for w in &a.step_projections {
        let recorded = match w.baseline {
            profilednn_advice::StepBaseline::ReplayedAsRecorded => {
                format!("; recorded {:.3} ms", w.logged_step_ms)
            }
            profilednn_advice::StepBaseline::Recorded => String::new(),
        };
        let drift = if w.trusted() {
            String::new()
        } else {
            format!(
                "; the step replayed as recorded took {:.2}× the recorded one: no gain is taken from it",
                w.drift()
            )
        };
        let _ = writeln!(
            out,
            "  Whole step `{}`, the headline ({}): {:.3} → {:.3} ms per iteration ({}, against {}{recorded}){drift}",
            w.transform,
            w.replayed_with,
            w.baseline_step_ms,
            w.projected_step_ms,
            profilednn_advice::Projected::factor(w.speedup()),
            w.baseline.name(),
        );
        for p in a.projections.iter().filter(|p| p.transform == w.transform) {
            let _ = writeln!(
                out,
                "    of which oneDNN (the log's primitives replayed alone; {}): {}",
                p.replay,
                onednn_figures(p)
            );
        }
    }
    for p in &a.projections {
        if !a
            .step_projections
            .iter()
            .any(|w| w.transform == p.transform)
        {
            let _ = writeln!(
                out,
                "  `{}` ({}): oneDNN {}",
                p.transform,
                p.replay,
                onednn_figures(p)
            );
        }
    }
    out
}

/// `short`: titles, gains and actions only (the section at the end of `report`).
pub fn render(a: &Advice, short: bool) -> String {
    let mut out = String::new();
    if !a.projections.is_empty() || !a.step_projections.is_empty() {
        let _ = writeln!(
            out,
            "\nWhat-if projections on this machine (the gains below use them):"
        );
        out += &projection_lines(a);
    }
    if a.findings.is_empty() {
        let _ = writeln!(out, "\nAdvice: no rule fired ({} checked).", a.rules.len());
    } else {
        let _ = writeln!(
            out,
            "\nAdvice ({} finding(s), {} first)",
            a.findings.len(),
            if a.findings.iter().any(|f| f.step_share.is_some()) {
                "largest share of the wall-clock step"
            } else {
                "largest estimated gain"
            }
        );
    }
    for (i, f) in a.findings.iter().enumerate() {
        // One share of the step per finding: the title of a rule on the PyTorch trace states it
        // already ("3.9% of the step"), and a second, differently rounded figure read as two.
        let share = f
            .step_share
            .filter(|s| !f.title.contains(&format!("{:.1}%", s * 100.0 + 0.0)))
            .map_or(String::new(), |s| {
                format!(" ({:.1} % of the step)", s * 100.0)
            });
        let _ = writeln!(out, "\n{}. [{}] {}{share}", i + 1, f.id, f.title);
        if !short {
            let facts: Vec<String> = f
                .evidence
                .iter()
                .filter_map(|(k, v)| evidence_line(k, v))
                .collect();
            if !facts.is_empty() {
                let _ = writeln!(out, "   evidence: {}", facts.join(", "));
            }
            if let Some(Value::Array(rows)) = f.evidence.get("heaviest") {
                for r in rows.iter().take(3) {
                    let prim = r.get("primitive").and_then(|p| p.as_str()).unwrap_or("");
                    let spread = match (r.get("min_ms"), r.get("median_ms"), r.get("p90_ms")) {
                        (Some(a), Some(m), Some(p)) => {
                            let f =
                                |v: &Value| v.as_f64().map_or("?".into(), |x| format!("{x:.3}"));
                            format!(
                                "; per call: fastest {}, median {}, p90 {} ms",
                                f(a),
                                f(m),
                                f(p)
                            )
                        }
                        _ => String::new(),
                    };
                    let extra = r
                        .get("time_ms")
                        .or_else(|| r.get("lost_ms"))
                        .and_then(|t| t.as_f64())
                        .map(|t| format!(" ({t:.1} ms{spread})"))
                        .unwrap_or_default();
                    let _ = writeln!(out, "     · {prim}{extra}");
                }
            }
        }
        let gain = match (f.gain_ms, f.gain_ms_per_iteration) {
            (Some(g), Some(it)) => format!("up to {g:.1} ms ({it:.1} ms per iteration)"),
            (Some(g), None) => format!("up to {g:.1} ms"),
            _ => "not estimable from the log".to_string(),
        };
        let _ = writeln!(out, "   gain: {gain} — {}", f.gain_basis);
        let _ = writeln!(out, "   try: {}", f.action);
    }
    if !a.not_recommended.is_empty() {
        let _ = writeln!(
            out,
            "\nNot recommended (projected, or measured, slower on this machine):"
        );
        for n in &a.not_recommended {
            let _ = writeln!(out, "  [{}] {}", n.id, n.why);
        }
    }
    if !short {
        let quiet: Vec<String> = a
            .rules
            .iter()
            .filter(|r| !r.fired && !a.not_recommended.iter().any(|n| n.id == r.id))
            .map(|r| format!("  {}: {}", r.id, r.why_not.as_deref().unwrap_or("")))
            .collect();
        if !quiet.is_empty() {
            let _ = writeln!(out, "\nRules that did not fire:\n{}", quiet.join("\n"));
        }
    } else if !a.findings.is_empty() {
        let _ = writeln!(
            out,
            "\n(`profilednn advise LOG` shows the evidence of each finding.)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_advice::{Finding, Thresholds, SCHEMA};

    fn finding(title: &str, step_share: f64) -> Finding {
        Finding {
            id: "optimizer-as-many-ops",
            title: title.to_string(),
            evidence: Default::default(),
            gain_ms: Some(6.0),
            gain_ms_per_iteration: Some(1.0),
            gain_basis: String::new(),
            action: String::new(),
            projection: None,
            not_recommended: None,
            step_share: Some(step_share),
        }
    }

    /// Issue 51 item 6: "(5.9% of the step) (2.4 % of the step)" on one headline. A title
    /// that states its share gets no second one; a title without it gets it appended.
    #[test]
    fn a_finding_shows_one_share_of_the_step() {
        let advice = |f: Finding| Advice {
            schema: SCHEMA,
            total_time_ms: 100.0,
            iterations: Some(6),
            thresholds: Thresholds::default(),
            findings: vec![f],
            rules: vec![],
            projections: vec![],
            step_projections: vec![],
            not_recommended: vec![],
        };
        let stated = render(
            &advice(finding(
                "The optimizer step runs as 42 small ops (5.9% of the step)",
                0.059,
            )),
            true,
        );
        assert_eq!(stated.matches("of the step").count(), 1, "{stated}");
        let appended = render(&advice(finding("Reorders take 46.9 ms", 0.149)), true);
        assert!(
            appended.contains("46.9 ms (14.9 % of the step)"),
            "{appended}"
        );
    }
}
