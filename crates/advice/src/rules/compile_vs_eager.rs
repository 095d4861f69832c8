//! `compile-vs-eager`: whether `torch.compile` paid on this training, from the run and its twin
//! recorded the other way (`advise --against LOG TRACE`). Compiling is advised everywhere, and
//! on a CPU it often does not pay: a BERT-style encoder trained 4–6 % slower compiled on a Xeon
//! with AMX (issue 55). The verdict is the two measured steady steps; the why is where the
//! difference sits: Inductor's kernels against the eager ops they took over, the rest (GEMMs,
//! attention and the optimizer, which compiling leaves to the same libraries), and the phases.

use super::*;
use profilednn_analysis::compile_cost::{steady_walls, trace_step, warm_up};
use profilednn_analysis::torch_compare::{compare, TorchComparison};
use profilednn_torchtrace::TorchJoin;

pub const ID: &str = "compile-vs-eager";

/// Whether a run is the compiled one: Inductor's kernels ran in it, an iteration compiled, or
/// it called a compiled region.
fn compiled(j: &TorchJoin) -> bool {
    !j.framework.inductor_kernels.is_empty() || warm_up(j).is_some() || j.compiled_regions > 0
}

/// The steady step of a run (a compiled run's compiling iterations left out).
fn step_ms(j: &TorchJoin) -> Option<f64> {
    trace_step(j).map(|s| s.wall_ms)
}

/// The lowest and highest of a run's steady steps.
fn range(j: &TorchJoin) -> Option<(f64, f64)> {
    let w = steady_walls(j);
    let lo = w.iter().copied().reduce(f64::min)?;
    Some((lo, w.iter().copied().fold(lo, f64::max)))
}

/// Whether two steps are a tie on these recordings: each run's median lies within the other's
/// steady steps (a shared 2-vCPU machine's steps spread ±20 %; a BERT-style encoder's eager and
/// compiled steps read 176–245 and 166–248 ms, medians 4 % apart, where unprofiled alternated
/// steps read 0.99×).
fn tie(e: f64, c: f64, er: (f64, f64), cr: (f64, f64)) -> bool {
    (cr.0..=cr.1).contains(&e) && (er.0..=er.1).contains(&c)
}

/// "backward +5.2 ms, forward −1.0 ms": the phases whose time changed most (at least 1 % of
/// the eager step), largest first.
fn phases(c: &TorchComparison, eager_step: f64) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = c
        .phases
        .iter()
        .map(|p| (p.name.clone(), p.after.time_ms - p.before.time_ms))
        .filter(|(_, d)| d.abs() >= 0.01 * eager_step)
        .collect();
    v.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    v.truncate(3);
    v
}

fn signed(v: f64) -> String {
    format!("{}{:.1} ms", if v >= 0.0 { "+" } else { "−" }, v.abs())
}

pub fn check(ev: &Evidence, _: &Thresholds) -> Result<Finding, String> {
    let this = ev.torch.ok_or(
        "no PyTorch trace (pass --torch-trace, and the run recorded the other way with --against) (not applicable)",
    )?;
    let twin = ev.twin.ok_or(
        "no twin run (pass the same training recorded eager or compiled with --against LOG TRACE) (not applicable)",
    )?;
    let (eager, compiled_run, this_compiled) = match (compiled(this), compiled(twin)) {
        (true, false) => (twin, this, true),
        (false, true) => (this, twin, false),
        (true, true) => return Err("both runs compiled: --against takes the eager twin".into()),
        (false, false) => {
            return Err("neither run compiled: --against takes the compiled twin".into())
        }
    };
    let e = step_ms(eager).ok_or("the eager run has no steady step (no iteration ranges)")?;
    let c = step_ms(compiled_run)
        .ok_or("the compiled run has no steady step (every iteration compiled, or no ranges)")?;
    let (er, cr) = (
        range(eager).unwrap_or((e, e)),
        range(compiled_run).unwrap_or((c, c)),
    );
    let tied = c == e || tie(e, c, er, cr);
    let cmp = compare(eager, compiled_run);
    let faster = c < e;
    let ratio = if faster { e / c } else { c / e };
    let f = &cmp.fused;
    let fused_delta = f.kernel_ms - f.eager_ms;
    let rest = (c - e) - fused_delta;
    let mut why = if compiled_run.framework.inductor_kernels.is_empty() {
        "the compiled run's trace names no Inductor kernel (recorded without \
         `torch._inductor.config.cpp.enable_kernel_profile`, which `profilednn.profile` sets)"
            .to_string()
    } else if f.kernels.is_empty() {
        "none of the eager run's ops was found in Inductor's kernels' names".to_string()
    } else {
        format!(
            "Inductor's {} kernels took {:.1} ms where the eager ops they took over took {:.1} ms \
             ({}, means over the iterations that did not compile); the rest of the step \
             (GEMMs, attention and the optimizer, which compiling leaves to the same libraries, \
             and the time between ops) {}",
            f.kernels.len(),
            f.kernel_ms,
            f.eager_ms,
            signed(fused_delta),
            signed(rest)
        )
    };
    let ph = phases(&cmp, e);
    if !ph.is_empty() {
        let list: Vec<String> = ph
            .iter()
            .map(|(n, d)| format!("{n} {}", signed(*d)))
            .collect();
        why.push_str(&format!("; by phase: {}", list.join(", ")));
    }
    // Python stacks (`profilednn.profile(modules=True)`, the eager default) cost the eager
    // step their overhead; a compiled run is recorded without them. Two runs profiled
    // differently are not like with like: said, and no gain is drawn from them.
    let [with_stacks_eager, with_stacks_compiled] = cmp.python_stacks;
    let stacks = (with_stacks_eager, with_stacks_compiled);
    let unlike = stacks.0 != stacks.1;
    let caveat = if unlike {
        format!(
            " (not like with like: the {} run was profiled with Python stacks and the {} \
             without, which slows the profiled step: a BERT-style encoder's eager step read 240 \
             ms with them, 222 without; record both the same way, e.g. \
             `profilednn.profile(modules=False)`)",
            if stacks.0 { "eager" } else { "compiled" },
            if stacks.0 { "compiled" } else { "eager" }
        )
    } else {
        String::new()
    };
    let w = warm_up(compiled_run);
    let pays = match &w {
        _ if unlike => String::new(),
        Some(w) if tied => format!(
            "; compiling costs {:.1} s, with no measurable saving to pay it back",
            w.compile_ms / 1e3
        ),
        Some(w) if faster => format!(
            "; compiling costs {:.1} s, paid back after {:.0} steps",
            w.compile_ms / 1e3,
            (w.compile_ms / (e - c)).ceil()
        ),
        Some(w) => format!(
            "; compiling costs {:.1} s and never pays back",
            w.compile_ms / 1e3
        ),
        None => String::new(),
    };
    let title = if tied {
        format!(
            "the compiled and the eager step are a tie: {c:.1} against {e:.1} ms per step, within \
             the steps' own spread (compiled {:.0}–{:.0} ms, eager {:.0}–{:.0} ms; record more \
             steps to tell them apart){caveat}: {why}{pays}",
            cr.0, cr.1, er.0, er.1
        )
    } else {
        format!(
            "the compiled step is {ratio:.2}x {} than its eager twin ({c:.1} against {e:.1} ms \
             per step){caveat}: {why}{pays}",
            if faster { "faster" } else { "slower" },
        )
    };
    // The gain is the change from this run to its twin, when that change pays.
    let gain_per_step = if this_compiled { c - e } else { e - c };
    let iters = log_iterations(ev);
    let (gain, basis, action) = if unlike {
        (
            None,
            "withheld: the two runs were profiled differently (Python stacks in one only)",
            "Record the eager and the compiled run with the same profiler settings \
             (`profilednn.profile(modules=False)` for both), then advise again.",
        )
    } else if tied {
        (
            None,
            "none measurable: the two steps are a tie within their spread",
            "Neither way is measurably faster here: keep what is simpler to run (eager needs no \
             compile time), or let `profilednn.optimize` (which tries torch.compile) measure it with \
             alternated steps.",
        )
    } else if gain_per_step > 0.0 {
        (
            Some(gain_per_step * iters),
            "the measured steady steps of the two runs, per step (the compile time is paid once \
             before: see the payback)",
            if this_compiled {
                "Train this model eager: drop torch.compile (or compile only the parts whose \
                 kernels beat their eager ops, `torch.compile` on a submodule), or let \
                 `profilednn.optimize` (which tries torch.compile) measure it among its changes."
            } else {
                "Compile this model (`torch.compile(model)`), with a persistent Inductor cache \
                 (TORCHINDUCTOR_CACHE_DIR) so that later runs compile faster; \
                 `profilednn.optimize` measures it among its changes."
            },
        )
    } else {
        (
            None,
            "not a gain: this run already takes the faster way",
            if this_compiled {
                "Keep compiling: the compiled step is the faster one."
            } else {
                "Keep training eager: compiling this model made its step slower."
            },
        )
    };
    Ok(finding(
        ev,
        ID,
        title,
        map(vec![
            ("eager_step_ms", json!(e)),
            ("compiled_step_ms", json!(c)),
            ("faster", json!(if faster { "compiled" } else { "eager" })),
            (
                "this_run",
                json!(if this_compiled { "compiled" } else { "eager" }),
            ),
            ("fused_kernels", json!(f.kernels.len())),
            ("fused_kernel_ms", json!(f.kernel_ms)),
            ("fused_eager_ms", json!(f.eager_ms)),
            ("rest_change_ms", json!(rest)),
            (
                "phases",
                json!(ph
                    .iter()
                    .map(|(n, d)| json!({"phase": n, "change_ms": d}))
                    .collect::<Vec<_>>()),
            ),
            ("compile_ms", json!(w.as_ref().map(|w| w.compile_ms))),
            ("like_with_like", json!(!unlike)),
            ("tie", json!(tied)),
            ("eager_steps_ms", json!([er.0, er.1])),
            ("compiled_steps_ms", json!([cr.0, cr.1])),
        ]),
        gain,
        basis,
        action,
    ))
}
