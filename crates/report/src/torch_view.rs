//! The PyTorch view: framework ops and phases, split into oneDNN time and time outside it.

use crate::terminal::ms;
use profilednn_analysis::torch_compare::{PhaseChange, TorchComparison};
use profilednn_torchtrace::{OpRow, Phase, TorchJoin};
use std::fmt::Write;

/// Calls per iteration: an integer when whole (18, not 18.0), else one decimal (17.5).
fn calls(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        format!("{v:.1}")
    }
}

/// `what` heads the name column; the phase column is left out when every row is a phase.
fn table(out: &mut String, title: &str, what: &str, rows: &[OpRow], n: usize, per: f64) {
    let _ = writeln!(out, "\n{title}");
    let with_phase = rows.iter().any(|r| r.phase.is_some());
    let phase = |p: &str| {
        if with_phase {
            format!(" {p:<9}")
        } else {
            String::new()
        }
    };
    let _ = writeln!(
        out,
        "  {what:<58}{} {:>7} {:>11} {:>11} {:>11}",
        phase("phase"),
        "calls",
        "time ms",
        "oneDNN ms",
        "outside ms"
    );
    for r in rows.iter().take(n) {
        let name: String = r.name.chars().take(58).collect();
        let _ = writeln!(
            out,
            "  {name:<58}{} {:>7} {:>11} {:>11} {:>11}",
            phase(r.phase.map_or("", |p| p.as_str())),
            calls(r.calls as f64 / per),
            ms(r.time_ms / per),
            ms(r.onednn_ms / per),
            ms(r.outside_ms / per)
        );
    }
}

pub fn render(j: &TorchJoin, n: usize) -> String {
    let mut out = String::new();
    let per = j.iterations.map_or(1.0, |i| i.max(1) as f64);
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
        ms(j.unattributed_ms / j.log_iterations.map_or(1.0, |i| i as f64))
    );
    for w in &j.warnings {
        let _ = writeln!(out, "  ⚠ {w}");
    }
    compilation(&mut out, j);
    runs_in(&mut out, j);
    table(&mut out, "Phases", "phase", &j.phases, 8, per);
    per_iteration(&mut out, j);
    table(
        &mut out,
        "Framework ops, most time outside oneDNN first",
        "op",
        &j.ops,
        n,
        per,
    );
    framework(&mut out, j, n, per);
    whole_step(&mut out, j);
    inductor_kernels(&mut out, j, n, per);
    let mut issuing = j.issuing_ops.clone();
    issuing.iter_mut().for_each(|r| r.calls = r.primitives);
    table(
        &mut out,
        "Ops issuing oneDNN primitives",
        "op",
        &issuing,
        n.min(10),
        per,
    );
    if !j.modules.is_empty() {
        table(
            &mut out,
            "Modules (forward, time includes child modules)",
            "module",
            &j.modules,
            n,
            per,
        );
    }
    if !j.module_backward.is_empty() {
        table(
            &mut out,
            "Modules (backward: the autograd nodes their forward ops created)",
            "module",
            &j.module_backward,
            n,
            per,
        );
    }
    let mut reorders: Vec<&(String, String, u64)> =
        j.issued.iter().filter(|(k, _, _)| k == "reorder").collect();
    reorders.sort_by_key(|r| std::cmp::Reverse(r.2));
    if !reorders.is_empty() {
        let _ = writeln!(
            out,
            "\nLayout conversions (reorders) by the op that caused them"
        );
        for (_, op, count) in reorders.iter().take(n.min(10)) {
            let _ = writeln!(
                out,
                "  {op:<58} {:>9} per iteration",
                calls(*count as f64 / per)
            );
        }
    }
    out
}

/// The framework ops' cost: flops, bytes and achieved rates, where each runs, and the share of
/// framework-op time that has a cost.
fn framework(out: &mut String, j: &TorchJoin, n: usize, per: f64) {
    let f = &j.framework;
    let Some(share) = f.costed_share else {
        return;
    };
    let _ = writeln!(
        out,
        "\nFramework ops' cost (from the trace's shapes): {:.1}% of framework-op time costed",
        share * 100.0
    );
    if f.without_shapes > 0 {
        let _ = writeln!(
            out,
            "  {} calls have no shapes: record with record_shapes=True (`profilednn record --torch` does)",
            f.without_shapes
        );
    }
    if let Some(t) = &f.roofline {
        let mut lost: Vec<_> = f.rows.iter().filter(|r| r.lost_ms.is_some()).collect();
        lost.sort_by(|a, b| {
            b.lost_ms
                .unwrap_or(0.0)
                .total_cmp(&a.lost_ms.unwrap_or(0.0))
        });
        let largest: Vec<String> = lost
            .iter()
            .take(3)
            .map(|r| {
                format!(
                    "{} {} ms",
                    clip(&r.name, 48),
                    ms(r.lost_ms.unwrap_or(0.0) / per)
                )
            })
            .collect();
        let lost_text = match t.lost_ms {
            Some(l) => format!(
                "{} ms lost{}; largest: {}",
                ms(l / per),
                if per > 1.0 { " per iteration" } else { "" },
                largest.join(", ")
            ),
            None => "no time lost is given: the roofs are suspect".into(),
        };
        let _ = writeln!(
            out,
            "  against the roofline of {}: {:.1}% of the bound; {lost_text}",
            t.machine,
            t.efficiency * 100.0,
        );
        for s in &t.suspect {
            let _ = writeln!(out, "  ⚠ suspect: {s}");
        }
        if !t.substituted.is_empty() {
            let _ = writeln!(
                out,
                "  (the profile has no {} peak: those ops are set against f32's)",
                t.substituted.join("/")
            );
        }
    }
    let _ = writeln!(
        out,
        "  {:<56} {:<7} {:>9} {:>10} {:>10} {:>9} {:>8} {:>9}",
        "op", "runs in", "calls", "ms", "GFLOP", "GFLOP/s", "GB/s", "lost ms"
    );
    let rate = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.1}"));
    for r in f.rows.iter().filter(|r| r.costed_calls > 0).take(n) {
        let _ = writeln!(
            out,
            "  {:<56} {:<7} {:>9} {:>10} {:>10.3} {:>9} {:>8} {:>9}",
            clip(&r.name, 56),
            r.runs_in,
            calls(r.calls as f64 / per),
            ms(r.time_ms / per),
            (r.flops + r.extra_flops) as f64 / per / 1e9,
            rate(r.gflops),
            rate(r.gbps),
            r.lost_ms.map_or(String::new(), |l| ms(l / per))
        );
    }
    let uncosted: Vec<_> = f.rows.iter().filter(|r| r.costed_calls == 0).collect();
    if !uncosted.is_empty() {
        let ms_total: f64 = uncosted.iter().map(|r| r.time_ms).sum();
        let names: Vec<String> = uncosted
            .iter()
            .take(5)
            .map(|r| format!("{} {} ms", clip(&r.name, 48), ms(r.time_ms / per)))
            .collect();
        let _ = writeln!(
            out,
            "  without a cost: {} ms in {} ops ({}{})",
            ms(ms_total / per),
            uncosted.len(),
            names.join(", "),
            if uncosted.len() > 5 { ", …" } else { "" }
        );
    }
}

/// The whole step against the roofline: the efficiency line, its parts, and the time lost
/// ranked across primitives and framework ops.
fn whole_step(out: &mut String, j: &TorchJoin) {
    let Some(w) = &j.whole_step else {
        return;
    };
    let _ = writeln!(
        out,
        "\nWhole step against the roofline (per iteration): {} ms a step, {} ms at the roofs: \
         {:.1}% efficiency{}",
        ms(w.step_ms),
        ms(w.onednn.roofline_ms + w.framework.roofline_ms),
        w.efficiency * 100.0,
        if w.suspect.is_empty() {
            ""
        } else {
            " (⚠ suspect roofs: not to be trusted, and no time lost is given)"
        }
    );
    for s in &w.suspect {
        let _ = writeln!(out, "  ⚠ suspect: {s}");
    }
    let part = |out: &mut String, what: &str, p: &profilednn_torchtrace::whole_step::Part| {
        let _ = writeln!(
            out,
            "  {what:<44} {:>10} ms, {:>10} ms at the roofs{}",
            ms(p.measured_ms),
            ms(p.roofline_ms),
            p.lost_ms
                .map_or(String::new(), |l| format!(", {:>10} ms lost", ms(l)))
        );
    };
    part(out, "oneDNN primitives (costed)", &w.onednn);
    part(out, "framework ops outside oneDNN (costed)", &w.framework);
    let _ = writeln!(
        out,
        "  {:<44} {:>10} ms (ops without a cost, Python and dispatch between ops: no roof)",
        "the rest",
        ms(w.rest_ms)
    );
    if !w.lost.is_empty() {
        let _ = writeln!(out, "  time lost, largest first:");
        for l in &w.lost {
            let _ = writeln!(
                out,
                "    {:>10} ms  {:<7} {:>6.1}%  {}",
                ms(l.lost_ms),
                l.runs_in,
                l.efficiency * 100.0,
                clip(&l.name, 90)
            );
        }
    }
}

/// The step by where it runs, each class with its share.
fn runs_in(out: &mut String, j: &TorchJoin) {
    if j.runs_in.is_empty() {
        return;
    }
    // "Steady" only when compiling iterations were set apart: an eager run's iterations are
    // all in it, the first one's warm-up included.
    let per = if j.compiling.is_empty() {
        "per iteration"
    } else {
        "per steady iteration"
    };
    let _ = writeln!(out, "\nWhere the step runs (ms {per})");
    for r in j.runs_in.iter().filter(|r| r.time_ms > 0.0) {
        let _ = writeln!(
            out,
            "  {:<16} {:>10} {:>6.1}%",
            r.class,
            ms(r.time_ms),
            r.share * 100.0
        );
    }
}

/// The iterations that compiled, which the per-iteration figures leave out.
fn compilation(out: &mut String, j: &TorchJoin) {
    if j.compiling.is_empty() {
        return;
    }
    let list: Vec<String> = j
        .compiling
        .iter()
        .map(|c| format!("{} ({:.1} s)", c.index, c.compile_ms / 1e3))
        .collect();
    let _ = writeln!(
        out,
        "  torch.compile: iteration{} {} compiled; the per-iteration figures are over the {} \
         other (steady) iteration{}",
        if list.len() > 1 { "s" } else { "" },
        list.join(", "),
        j.iterations.unwrap_or(0),
        if j.iterations == Some(1) { "" } else { "s" }
    );
    if let Some(w) = profilednn_analysis::compile_cost::warm_up(j) {
        let _ = writeln!(
            out,
            "  compile warm-up: {}",
            crate::diff_text::compiled::warm_up_line(&w)
        );
    }
    dynamo(out, j);
}

/// Dynamo's frames, graph breaks and recompilations, as `profilednn.profile` recorded them.
fn dynamo(out: &mut String, j: &TorchJoin) {
    let Some(d) = &j.dynamo else {
        return;
    };
    let _ = writeln!(
        out,
        "  Dynamo: {} frame(s) compiled, {} graph break(s), {} recompilation(s)",
        d.frames,
        d.breaks(),
        d.recompiles.len()
    );
    for b in &d.graph_breaks {
        let _ = writeln!(
            out,
            "    graph break ×{}: {}",
            b.count,
            clip(&b.reason, 160)
        );
    }
    for f in &d.resume_frames {
        let _ = writeln!(out, "    resumes after a break: {f}");
    }
    for r in &d.recompiles {
        let _ = writeln!(
            out,
            "    recompiled {}{}: {}",
            r.id,
            r.frame
                .as_deref()
                .map_or(String::new(), |f| format!(" ({f})")),
            clip(&r.reason, 160)
        );
    }
}

/// torch.compile's generated kernels, by name, with the ops each fused; or, when the trace has
/// only the compiled regions, how to record the kernels.
fn inductor_kernels(out: &mut String, j: &TorchJoin, n: usize, per: f64) {
    let f = &j.framework;
    if f.compiled_region_ms <= 0.0 {
        return;
    }
    if f.inductor_kernels.is_empty() {
        let _ = writeln!(
            out,
            "\nCompiled regions (torch.compile): {} ms; the trace has no kernel inside them: \
             record with TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1 (`profilednn record --torch` \
             and `profilednn.profile()` turn it on) to see Inductor's kernels by name",
            ms(f.compiled_region_ms / per)
        );
        return;
    }
    let total: f64 = f.inductor_kernels.iter().map(|k| k.time_ms).sum();
    let _ = writeln!(
        out,
        "\nInductor kernels (torch.compile's generated code): {} ms in {} kernels, of the \
         compiled regions' {} ms",
        ms(total / per),
        f.inductor_kernels.len(),
        ms(f.compiled_region_ms / per)
    );
    let costed = f
        .inductor_kernels
        .iter()
        .filter(|k| k.cost.is_some())
        .count();
    if costed > 0 {
        let _ = writeln!(
            out,
            "  {costed} of them costed, {}: bytes of their buffers, the fused ops' operations \
             over their elements",
            profilednn_torchtrace::framework::KERNEL_COST
        );
    } else if let Some(why) = f
        .inductor_kernels
        .iter()
        .find_map(|k| k.uncosted.as_deref())
    {
        let _ = writeln!(out, "  not costed: {why}");
    }
    // A kernel's name lists the ops it fused: printed last, at full length up to 110 characters.
    let _ = writeln!(
        out,
        "  {:>9} {:>10} {:>8} {:>8} {:>6} {:>8}  kernel (named after the ops it fused)",
        "calls", "ms", "GFLOP/s", "GB/s", "bound", "% roof"
    );
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
    for k in f.inductor_kernels.iter().take(n) {
        let _ = writeln!(
            out,
            "  {:>9} {:>10} {:>8} {:>8} {:>6} {:>8}  {}",
            calls(k.calls as f64 / per),
            ms(k.time_ms / per),
            opt(k.gflops, &|g| format!("{g:.1}")),
            opt(k.gbps, &|g| format!("{g:.1}")),
            k.bound.unwrap_or("-"),
            opt(k.efficiency, &|e| format!("{:.1}", e * 100.0)),
            clip(&k.name, 110)
        );
    }
    if f.inductor_kernels.len() > n {
        let _ = writeln!(out, "  … {} more kernels", f.inductor_kernels.len() - n);
    }
    let uncosted = f.inductor_kernels.len() - costed;
    if costed > 0 && uncosted > 0 {
        let _ = writeln!(
            out,
            "  {uncosted} kernel(s) not costed: {}",
            f.inductor_kernels
                .iter()
                .filter_map(|k| Some(format!("{} ({})", k.name, k.uncosted.as_deref()?)))
                .take(5)
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

fn per_iteration(out: &mut String, j: &TorchJoin) {
    if j.per_iteration.is_empty() {
        return;
    }
    // Phase columns in the order of a training step.
    let cols: Vec<&str> = Phase::STEP_ORDER
        .iter()
        .map(|p| p.as_str())
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
        if let Some(c) = j.compiling.iter().find(|c| c.index == it.index) {
            let _ = write!(line, "  compiling: {} ms", ms(c.compile_ms));
        }
        let _ = writeln!(out, "{line}");
    }
}

/// Two runs' PyTorch views side by side: phases, then the framework ops whose time changed most.
pub fn render_diff(c: &TorchComparison, n: usize) -> String {
    let mut out = crate::diff_text::compiled::compile(c);
    let _ = writeln!(out, "\nPyTorch view, per iteration (before → after)");
    let _ = writeln!(
        out,
        "  {:<12} {:>22} {:>24}",
        "phase", "time ms", "outside oneDNN ms"
    );
    let mut phases: Vec<&PhaseChange> = c.phases.iter().collect();
    phases.sort_by(|a, b| a.name.cmp(&b.name));
    for p in phases {
        let _ = writeln!(
            out,
            "  {:<12} {:>10} → {:<10} {:>11} → {:<10}",
            p.name,
            ms(p.before.time_ms),
            ms(p.after.time_ms),
            ms(p.before.outside_ms),
            ms(p.after.outside_ms)
        );
    }
    out += &crate::diff_text::compiled::fused(c, n);
    let _ = writeln!(out, "\nFramework ops that changed most (ms per iteration)");
    for o in c.ops.iter().take(n) {
        let name: String = o.name.chars().take(58).collect();
        let _ = writeln!(
            out,
            "  {name:<58} {:<9} {:>10} → {:<10}",
            o.phase.map_or("", |p| p.as_str()),
            ms(o.before_ms),
            ms(o.after_ms)
        );
    }
    out
}
