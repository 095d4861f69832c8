//! Eager against compiled, in the terminal: the compiled run's compile warm-up and payback, and
//! the eager ops beside the Inductor kernels that took them over (with the kernels' own time).

use crate::terminal::ms;
use profilednn_analysis::compile_cost::{Payback, WarmUp};
use profilednn_analysis::torch_compare::TorchComparison;
use std::fmt::Write;

/// A duration in seconds from a second up (a compile), else in ms.
pub fn duration(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{:.1} s", v / 1e3)
    } else {
        format!("{} ms", ms(v))
    }
}

/// `s` in `n` characters, its middle left out: kernels' names differ at their end
/// (`…_native_layer_norm_backward_3`, `…_4`).
fn clip(s: &str, n: usize) -> String {
    let count = s.chars().count();
    if count <= n {
        return s.to_string();
    }
    let tail = n / 3;
    let head: String = s.chars().take(n - tail - 1).collect();
    let end: String = s.chars().skip(count - tail).collect();
    format!("{head}…{end}")
}

/// "first step 3.2 s, of which compiling ≈ 3.2 s (first − steady step of 17.956 ms; …)".
pub fn warm_up_line(w: &WarmUp) -> String {
    let recompiled = match w.iterations.len() {
        0 | 1 => String::new(),
        k => format!(" and {} recompilation(s)", k - 1),
    };
    format!(
        "first step {}, of which compiling ≈ {}{recompiled} (first − steady step of {}; \
         Dynamo/Inductor's own events {})",
        duration(w.first_step_ms),
        duration(w.compile_ms),
        duration(w.steady_step_ms),
        duration(w.compile_events_ms)
    )
}

/// "compiling costs X s; at the measured saving of Y ms per step it pays back after N steps".
pub fn payback_line(p: &Payback) -> String {
    match p.steps {
        Some(n) => format!(
            "compiling costs {}; at the measured saving of {} ms per step it pays back after \
             {n} steps",
            duration(p.compile_ms),
            ms(p.saving_ms_per_step)
        ),
        None => format!(
            "compiling costs {} and never pays back: the compiled step is {} ms slower than \
             the eager one",
            duration(p.compile_ms),
            ms(-p.saving_ms_per_step)
        ),
    }
}

/// The compiled (second) run's warm-up and payback; empty when it did not compile.
pub fn compile(c: &TorchComparison) -> String {
    let mut out = String::new();
    if let Some(w) = &c.warm_up {
        let _ = writeln!(out, "\ntorch.compile (after): {}", warm_up_line(w));
    }
    if let Some(p) = &c.payback {
        let _ = writeln!(out, "  {}", payback_line(p));
    }
    if let Some(line) = unlike_line(c) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// Two runs profiled one with Python stacks and one without: their steps are not like with
/// like (the stacks' overhead slows the profiled step), said beside the figures.
pub fn unlike_line(c: &TorchComparison) -> Option<String> {
    let [before, after] = c.python_stacks;
    (before != after).then(|| {
        format!(
            "not like with like: the {} run was profiled with Python stacks and the {} without, \
             which slows the profiled step; record both the same way \
             (`profilednn.profile(modules=False)`)",
            if before { "first" } else { "second" },
            if before { "second" } else { "first" }
        )
    })
}

/// The eager ops by the kernel that took them over, `n` kernels at most.
pub fn fused(c: &TorchComparison, n: usize) -> String {
    let mut out = String::new();
    let f = &c.fused;
    if f.kernels.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nOps fused into the second run's Inductor kernels (ms per iteration): {} ms of eager \
         ops → {} ms in {} kernels",
        ms(f.eager_ms),
        ms(f.kernel_ms),
        f.kernels.len()
    );
    let _ = writeln!(
        out,
        "  {:<64} {:>10} {:>10}  eager ops (an op in several kernels is shared by their time)",
        "kernel", "kernel ms", "eager ms"
    );
    for k in f.kernels.iter().take(n) {
        let ops: Vec<&str> = k
            .ops
            .iter()
            .map(|o| o.strip_prefix("aten::").unwrap_or(o))
            .collect();
        let _ = writeln!(
            out,
            "  {:<64} {:>10} {:>10}  {}",
            clip(&k.kernel, 64),
            ms(k.kernel_ms),
            ms(k.eager_ms),
            clip(&ops.join(", "), 60)
        );
    }
    if f.kernels.len() > n {
        let _ = writeln!(out, "  … {} more kernels", f.kernels.len() - n);
    }
    out
}
