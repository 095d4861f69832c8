//! `profilednn diff` as terminal tables.

use crate::terminal::{ms, new_table, num, text, TerminalOptions};
use profilednn_analysis::diff::{Diff, PrimitiveDiff};
use profilednn_analysis::scale::Scale;
use std::fmt::Write;

pub mod compiled;

/// `before / after` as words: identical times are "no change", and a ratio that would print
/// as 1.00x says how small the change is instead.
pub fn speed(s: Option<f64>) -> String {
    match s {
        Some(1.0) => "no change".into(),
        Some(x) if (x - 1.0).abs() < 0.005 => {
            format!(
                "within 0.5% ({})",
                if x > 1.0 { "faster" } else { "slower" }
            )
        }
        Some(x) if x >= 1.0 => format!("{x:.2}x faster"),
        Some(x) => format!("{:.2}x slower", 1.0 / x),
        None => String::new(),
    }
}

fn calls(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn primitive_table(rows: &[PrimitiveDiff], opts: &TerminalOptions) -> comfy_table::Table {
    let mut t = new_table(opts);
    t.set_header(vec![
        "primitive",
        "before ms",
        "after ms",
        "Δ ms",
        "speed-up",
        "calls",
        "implementation",
    ]);
    for r in rows.iter().take(opts.rows) {
        let impls = if r.implementation_changed {
            format!(
                "{} → {}",
                r.before.implementations.join(" "),
                r.after.implementations.join(" ")
            )
        } else {
            r.before
                .implementations
                .iter()
                .chain(&r.after.implementations)
                .next()
                .cloned()
                .unwrap_or_default()
        };
        t.add_row(vec![
            text(format!(
                "{} {} {}\n{}",
                r.prim_kind, r.prop_kind, r.dtype, r.shapes
            )),
            num(ms(r.before.time_ms)),
            num(ms(r.after.time_ms)),
            num(format!("{:+.3}", r.delta_ms)),
            num(speed(r.speedup)),
            num(format!(
                "{} → {}",
                calls(r.before.calls),
                calls(r.after.calls)
            )),
            text(impls),
        ]);
    }
    t
}

pub fn render(d: &Diff, opts: &TerminalOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profilednn diff\n  before: {}\n  after:  {}",
        d.before, d.after
    );
    let scale = if d.scale == Scale::PerIteration {
        format!(
            "per iteration ({} vs {} iterations)",
            d.before_iterations.unwrap_or(0),
            d.after_iterations.unwrap_or(0)
        )
    } else {
        "whole logs (iteration counts not known for both)".to_string()
    };
    let mut matching = vec!["kind, propagation, problem, data types, algorithm"];
    if d.ignore_batch {
        matching.push("minibatch ignored");
    }
    if d.ignore_dtype {
        matching.push("data types ignored");
    }
    let _ = writeln!(
        out,
        "  figures {scale}; primitives matched by {}",
        matching.join("; ")
    );
    if let Some(st) = &d.step {
        // What the user waits for first: the wall-clock step (steady medians), and the time
        // outside oneDNN beside it; oneDNN's time second.
        let _ = writeln!(
            out,
            "\nTraining step (wall clock, median of {} vs {} steady iterations{}): {} ms → {} ms ({})",
            st.before.iterations,
            st.after.iterations,
            if st.from == "trace" {
                " of the traces"
            } else {
                ""
            },
            ms(st.before.wall_ms),
            ms(st.after.wall_ms),
            speed(st.speedup)
        );
        let _ = writeln!(
            out,
            "  outside oneDNN: {} ms → {} ms; oneDNN: {} ms → {} ms",
            ms(st.before.outside_ms),
            ms(st.after.outside_ms),
            ms(st.before.onednn_ms),
            ms(st.after.onednn_ms)
        );
    }
    let _ = writeln!(
        out,
        "{}oneDNN time: {} ms → {} ms ({})",
        if d.step.is_some() { "" } else { "\n" },
        ms(d.before_time_ms),
        ms(d.after_time_ms),
        speed(d.speedup)
    );
    let _ = writeln!(
        out,
        "  {} primitives matched, {} appeared, {} disappeared",
        d.matched, d.appeared_total, d.disappeared_total
    );
    let mut t = new_table(opts);
    t.set_header(vec![
        "kind",
        "prop",
        "before ms",
        "after ms",
        "Δ ms",
        "speed-up",
        "calls",
    ]);
    for g in &d.groups {
        t.add_row(vec![
            text(&g.prim_kind),
            text(&g.prop_kind),
            num(ms(g.before.time_ms)),
            num(ms(g.after.time_ms)),
            num(format!("{:+.3}", g.delta_ms)),
            num(speed(g.speedup)),
            num(format!(
                "{} → {}",
                calls(g.before.calls),
                calls(g.after.calls)
            )),
        ]);
    }
    let _ = writeln!(out, "\nBy kind and propagation\n{t}");
    let sections: [(&str, &[PrimitiveDiff], usize); 5] = [
        (
            "Largest changes of matched primitives",
            &d.changes,
            d.matched,
        ),
        ("Appeared (only after)", &d.appeared, d.appeared_total),
        (
            "Disappeared (only before)",
            &d.disappeared,
            d.disappeared_total,
        ),
        (
            "Implementation changed",
            &d.implementation_changes,
            d.implementation_changes_total,
        ),
        ("Call count changed", &d.call_changes, d.call_changes_total),
    ];
    for (title, rows, total) in sections {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "\n{title} ({} of {total})\n{}",
            rows.len().min(opts.rows),
            primitive_table(rows, opts)
        );
    }
    out
}
