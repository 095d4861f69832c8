//! The PyTorch view: framework ops and phases, split into oneDNN time and time outside it.

use crate::terminal::ms;
use profilednn_analysis::torch_trace::{OpRow, TorchJoin};
use std::fmt::Write;

fn table(out: &mut String, title: &str, rows: &[OpRow], n: usize, per: f64) {
    let _ = writeln!(out, "\n{title}");
    let _ = writeln!(
        out,
        "  {:<58} {:<9} {:>7} {:>11} {:>11} {:>11}",
        "", "phase", "calls", "time ms", "oneDNN ms", "outside ms"
    );
    for r in rows.iter().take(n) {
        let name: String = r.name.chars().take(58).collect();
        let _ = writeln!(
            out,
            "  {name:<58} {:<9} {:>7.1} {:>11} {:>11} {:>11}",
            r.phase,
            r.calls as f64 / per,
            ms(r.time_ms / per),
            ms(r.onednn_ms / per),
            ms(r.outside_ms / per)
        );
    }
}

pub fn render(j: &TorchJoin, n: usize) -> String {
    let mut out = String::new();
    let per = j.iterations.map_or(1.0, |i| i as f64);
    let unit = if j.iterations.is_some() {
        " (per iteration)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\nPyTorch view{unit}: {} of {} primitive executions attributed to a framework op ({} ms unattributed)",
        j.attributed_calls,
        j.attributed_calls + j.unattributed_calls,
        ms(j.unattributed_ms / per)
    );
    table(&mut out, "Phases", &j.phases, 8, per);
    table(
        &mut out,
        "Framework ops, most time outside oneDNN first",
        &j.ops,
        n,
        per,
    );
    let mut issuing = j.issuing_ops.clone();
    issuing.iter_mut().for_each(|r| r.calls = r.primitives);
    table(
        &mut out,
        "Ops issuing oneDNN primitives",
        &issuing,
        n.min(10),
        per,
    );
    let mut reorders: Vec<&(String, String, u64)> =
        j.issued.iter().filter(|(k, _, _)| k == "reorder").collect();
    reorders.sort_by(|a, b| b.2.cmp(&a.2));
    if !reorders.is_empty() {
        let _ = writeln!(
            out,
            "\nLayout conversions (reorders) by the op that caused them"
        );
        for (_, op, count) in reorders.iter().take(n.min(10)) {
            let _ = writeln!(out, "  {op:<58} {:>9.1} per iteration", *count as f64 / per);
        }
    }
    out
}
