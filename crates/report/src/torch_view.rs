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
    per_iteration(&mut out, j);
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
    if !j.modules.is_empty() {
        table(
            &mut out,
            "Modules (forward, time includes child modules)",
            &j.modules,
            n,
            per,
        );
    }
    if !j.module_backward.is_empty() {
        table(
            &mut out,
            "Modules (backward: the autograd nodes their forward ops created)",
            &j.module_backward,
            n,
            per,
        );
    }
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

/// Phase order in tables: the order of a training step.
const PHASES: [&str; 6] = [
    "data",
    "forward",
    "loss",
    "backward",
    "zero_grad",
    "optimizer",
];

fn per_iteration(out: &mut String, j: &TorchJoin) {
    if j.per_iteration.is_empty() {
        return;
    }
    let cols: Vec<&str> = PHASES
        .iter()
        .copied()
        .filter(|p| {
            j.per_iteration
                .iter()
                .any(|it| it.phases.iter().any(|r| r.name == *p))
        })
        .collect();
    let _ = writeln!(
        out,
        "\nEach iteration (ms; from the trace's iteration ranges)"
    );
    let mut head = format!("  {:>5} {:>10} {:>10}", "iter", "wall", "oneDNN");
    for c in &cols {
        let _ = write!(head, " {c:>10}");
    }
    let _ = writeln!(out, "{head}");
    for it in &j.per_iteration {
        let mut line = format!(
            "  {:>5} {:>10} {:>10}",
            it.index,
            ms(it.time_ms),
            ms(it.onednn_ms)
        );
        for c in &cols {
            let t = it
                .phases
                .iter()
                .find(|r| r.name == *c)
                .map_or(0.0, |r| r.time_ms);
            let _ = write!(line, " {:>10}", ms(t));
        }
        let _ = writeln!(out, "{line}");
    }
}

/// Two runs' PyTorch views side by side: phases, then the framework ops whose time changed most.
pub fn render_diff(b: &TorchJoin, a: &TorchJoin, n: usize) -> String {
    let mut out = String::new();
    let (pb, pa) = (
        b.iterations.map_or(1.0, |i| i as f64),
        a.iterations.map_or(1.0, |i| i as f64),
    );
    let _ = writeln!(out, "\nPyTorch view, per iteration (before → after)");
    let _ = writeln!(
        out,
        "  {:<12} {:>22} {:>24}",
        "phase", "time ms", "outside oneDNN ms"
    );
    let mut names: Vec<&str> = b
        .phases
        .iter()
        .chain(&a.phases)
        .map(|p| p.name.as_str())
        .collect();
    names.sort();
    names.dedup();
    let find = |v: &[OpRow], name: &str| {
        v.iter()
            .find(|r| r.name == name)
            .cloned()
            .unwrap_or_default()
    };
    for name in names {
        let (x, y) = (find(&b.phases, name), find(&a.phases, name));
        let _ = writeln!(
            out,
            "  {name:<12} {:>10} → {:<10} {:>11} → {:<10}",
            ms(x.time_ms / pb),
            ms(y.time_ms / pa),
            ms(x.outside_ms / pb),
            ms(y.outside_ms / pa)
        );
    }
    let key = |r: &OpRow| format!("{}\t{}", r.phase, r.name);
    let mut changes: Vec<(String, f64, f64)> = Vec::new();
    for r in b.ops.iter().chain(&a.ops) {
        let k = key(r);
        if changes.iter().any(|c| c.0 == k) {
            continue;
        }
        let x = b
            .ops
            .iter()
            .find(|o| key(o) == k)
            .map_or(0.0, |o| o.time_ms / pb);
        let y = a
            .ops
            .iter()
            .find(|o| key(o) == k)
            .map_or(0.0, |o| o.time_ms / pa);
        changes.push((k, x, y));
    }
    changes.sort_by(|p, q| (q.2 - q.1).abs().total_cmp(&(p.2 - p.1).abs()));
    let _ = writeln!(out, "\nFramework ops that changed most (ms per iteration)");
    for (k, x, y) in changes.iter().take(n) {
        let (phase, name) = k.split_once('\t').unwrap_or(("", k));
        let name: String = name.chars().take(58).collect();
        let _ = writeln!(
            out,
            "  {name:<58} {phase:<9} {:>10} → {:<10}",
            ms(*x),
            ms(*y)
        );
    }
    out
}
