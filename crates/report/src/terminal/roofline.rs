//! The efficiency (roofline) section of the terminal report.

use super::{ms, new_table, num, text, TerminalOptions};
use profilednn_analysis::Efficiency;
use std::fmt::Write;

fn rate(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// What stands where a time lost would, when the roofs are suspect.
pub const WITHHELD: &str =
    "no time lost is given: the roofs are suspect (⚠ above), and a time lost against a roof that is too low would be wrong";
const SUSPECT_TABLE: &str =
    " (⚠ the roofs are suspect: the shares of the bound are not to be trusted, and no time lost is given)";

fn lost(v: Option<f64>) -> String {
    v.map_or("—".into(), ms)
}

pub fn render(out: &mut String, e: &Efficiency, opts: &TerminalOptions) {
    let peaks: Vec<String> = e
        .peak_gflops
        .iter()
        .map(|(k, v)| format!("{k} {} GFLOP/s", rate(*v)))
        .collect();
    let _ = writeln!(
        out,
        "\nRoofline efficiency on {} ({}; memory {} GB/s)",
        e.machine,
        peaks.join(", "),
        rate(e.memory_gbps)
    );
    if let Some(m) = &e.log_machine {
        let _ = writeln!(out, "  {m}");
    }
    for why in &e.substitutions {
        let _ = writeln!(out, "  {why}");
    }
    if let Some(s) = &e.scaling {
        let _ = writeln!(out, "  {s}");
    }
    for s in &e.suspect {
        let _ = writeln!(out, "  ⚠ suspect: {s}");
    }
    if e.total_primitives == 0 {
        let _ = writeln!(
            out,
            "  No executed primitive has a roofline here, so there is no ratio: every one is without a cost or without a peak (listed below)."
        );
        render_uncosted(out, e);
        return;
    }
    let _ = writeln!(
        out,
        "  run-level: roofline time {} ms / measured {} ms = {} of the bound reached ({} of oneDNN time has a cost); {}",
        ms(e.roofline_ms),
        ms(e.measured_ms),
        pct(e.ratio),
        pct(e.coverage),
        e.lost_ms.map_or(WITHHELD.to_string(), |l| format!(
            "{} ms lost against the roofline",
            ms(l)
        ))
    );
    // Said again where the tables are: each of their figures rests on these roofs.
    let caveat = if e.suspect.is_empty() {
        ""
    } else {
        SUSPECT_TABLE
    };
    let mut t = new_table(opts);
    t.set_header(vec![
        "kind",
        "prop",
        "time ms",
        "roofline ms",
        "lost ms",
        "reached",
        "GFLOP/s",
        "GB/s",
    ]);
    for g in e.groups.iter().take(opts.rows) {
        t.add_row(vec![
            text(&g.prim_kind),
            text(&g.prop_kind),
            num(ms(g.time_ms)),
            num(ms(g.roofline_ms)),
            num(lost(g.lost_ms)),
            num(pct(g.efficiency)),
            num(rate(g.gflops)),
            num(rate(g.gbps)),
        ]);
    }
    let _ = writeln!(
        out,
        "\nBy kind and propagation, most time lost first{caveat}\n{t}"
    );
    let mut t = new_table(opts);
    t.set_header(vec![
        "primitive",
        "calls",
        "time ms",
        "lost ms",
        "reached",
        "bound",
        "GFLOP/s",
        "GB/s",
        "flop/B",
    ]);
    for r in &e.primitives {
        t.add_row(vec![
            text(format!(
                "{} {} {} {}\n{}",
                r.prim_kind, r.prop_kind, r.precision, r.implementation, r.shapes
            )),
            num(r.calls.to_string()),
            num(ms(r.time_ms)),
            num(lost(r.lost_ms)),
            num(pct(r.efficiency)),
            text(r.bound.as_str()),
            num(rate(r.gflops)),
            num(rate(r.gbps)),
            num(format!("{:.1}", r.intensity)),
        ]);
    }
    let _ = writeln!(
        out,
        "\nWhere optimisation pays: unique primitives by time lost against the roofline ({} of {}){caveat}\n{t}",
        e.primitives.len(),
        e.total_primitives
    );
    render_uncosted(out, e);
    let _ = writeln!(out, "  Note: {}.", e.caveat);
}

fn render_uncosted(out: &mut String, e: &Efficiency) {
    if !e.uncosted.is_empty() {
        let _ = writeln!(out, "  Without a cost (not in the ratio):");
        for u in e.uncosted.iter().take(5) {
            let _ = writeln!(
                out,
                "    {} ms in {} {} primitive(s): {}",
                ms(u.time_ms),
                u.primitives,
                u.prim_kind,
                u.reason
            );
        }
    }
}
