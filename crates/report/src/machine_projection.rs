//! The terminal text of `project --to`: one block per target (step with its band, parts,
//! families, phases, emulation, assumptions, what is not modelled).

use profilednn_project::target::{MachineProjection, Part, TargetProjection};
use std::fmt::Write;

pub fn render(d: &MachineProjection) -> String {
    let mut s = String::new();
    let unit = if d.per_iteration {
        "per iteration"
    } else {
        "whole log"
    };
    let _ = writeln!(
        s,
        "Projection of {}{} onto {} machine(s), {unit}",
        d.log,
        d.trace
            .as_deref()
            .map_or(String::new(), |t| format!(" with {t}")),
        d.targets.len()
    );
    let _ = writeln!(s, "  source: {} ({})", d.source.name, d.source.profile);
    if let Some(t) = d.log_threads {
        let _ = writeln!(s, "  log threads per rank: {t}");
    }
    for t in &d.targets {
        s.push('\n');
        target(&mut s, t);
    }
    s
}

fn target(s: &mut String, t: &TargetProjection) {
    let _ = writeln!(
        s,
        "Target: {} ({}, {} profile)",
        t.target,
        t.profile,
        t.profile_kind.replace('_', "-")
    );
    let _ = writeln!(
        s,
        "  step: {:.3} ms logged → {:.3} ms projected ({:.2}x), band {:.3}–{:.3} ms (±{:.0} %{}) at {} thread(s) per rank",
        t.logged_step_ms,
        t.projected_step_ms,
        t.ratio,
        t.band.low_ms,
        t.band.high_ms,
        t.band.relative * 100.0,
        if t.band.measured { ", measured" } else { ", not yet measured" },
        t.threads
    );
    let _ = writeln!(s, "  band: {}", t.band.basis);
    if let Some(e) = &t.epoch {
        let cost = match (e.cost, e.cost_low, e.cost_high, e.price_per_hour) {
            (Some(c), Some(lo), Some(hi), Some(p)) => {
                format!("; cost {c:.2} per epoch ({lo:.2}–{hi:.2}) at {p} per hour")
            }
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "  epoch: {:.0} steps, {:.1} s ({:.1}–{:.1} s){cost}",
            e.steps, e.epoch_s, e.epoch_s_low, e.epoch_s_high
        );
    }
    table(s, "parts", &t.parts);
    let _ = writeln!(s, "  families:");
    for f in t.families.iter().filter(|f| f.logged_ms > 0.0).take(12) {
        let _ = writeln!(
            s,
            "    {:<10} {:<40} {:>10.3} → {:>10.3} ms{}",
            f.part,
            f.family,
            f.logged_ms,
            f.projected_ms,
            if f.memory_bound_ms > 0.5 * f.logged_ms {
                "  (memory-bound)"
            } else {
                ""
            }
        );
    }
    if !t.phases.is_empty() {
        table(s, "phases", &t.phases);
    }
    for u in &t.unit_changes {
        let _ = writeln!(
            s,
            "  unit change: {} ({:.3} ms logged)",
            u.name, u.logged_ms
        );
    }
    for e in &t.emulated {
        let _ = writeln!(s, "  EMULATED: {e}");
    }
    let _ = writeln!(s, "  assumptions:");
    for a in &t.assumptions {
        let _ = writeln!(s, "    - {a}");
    }
    let _ = writeln!(s, "  not modelled:");
    for n in &t.not_modelled {
        let _ = writeln!(s, "    - {n}");
    }
}

fn table(s: &mut String, title: &str, rows: &[Part]) {
    let _ = writeln!(s, "  {title}:");
    for p in rows {
        let _ = writeln!(
            s,
            "    {:<51} {:>10.3} → {:>10.3} ms",
            p.name, p.logged_ms, p.projected_ms
        );
    }
}
