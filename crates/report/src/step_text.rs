//! The whole step of a replay (its `framework` section) on the terminal: the iteration as
//! logged and as replayed here, per phase and per op.

use profilednn_replay::framework::{FrameworkReplay, UnitMethod};
use std::fmt::Write;

/// The framework section of `replay`'s summary.
pub fn render(f: &FrameworkReplay) -> String {
    let mut out = String::new();
    let (logged_units, here_units) = f.replayed();
    let carried = f.carried_over_ms();
    let n_replayed: u64 = f
        .ops
        .iter()
        .filter(|o| o.method == UnitMethod::Torch)
        .map(|o| o.calls)
        .sum();
    let n_carried: u64 = f
        .ops
        .iter()
        .filter(|o| o.method == UnitMethod::CarriedOver)
        .map(|o| o.calls)
        .sum();
    let projected = f.projected_step_ms();
    let _ = writeln!(
        out,
        "Whole step: iteration {} of the trace's {}, its framework ops replayed through PyTorch {} \
         at {} thread(s){}{}{}",
        f.iteration,
        f.iterations,
        f.torch,
        f.threads,
        f.precision
            .as_deref()
            .map(|p| format!(", autocast's lower-precision ops in {p}"))
            .unwrap_or_default(),
        f.layout
            .as_deref()
            .map(|l| format!(", 4-D activations {l}"))
            .unwrap_or_default()
            + &f.batch
                .map(|[a, b]| format!(", batch {a} -> {b}"))
                .unwrap_or_default(),
        if f.under_profiler {
            ", under torch.profiler as recorded"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "  logged {:9.3} ms: {:.3} ms in the {} ops replayed, {:.3} ms in {} not replayable, \
         {:.3} ms outside the ops (Python, autograd engine)",
        f.logged_step_ms, logged_units, n_replayed, carried, n_carried, f.outside_units_ms
    );
    let (n_added, added_ms) = f.added();
    let _ = writeln!(
        out,
        "  here   {:9.3} ms ({}): the ops replayed {:.3} ms{}, the rest carried over",
        projected,
        ratio(f.logged_step_ms, projected),
        here_units,
        if n_added > 0 {
            format!(", {added_ms:.3} ms in {n_added} casts the what-if adds")
        } else {
            String::new()
        }
    );
    let phases = f.by(|o| o.phase.to_string());
    let _ = writeln!(out, "  per phase (logged → here, ms):");
    for (phase, (l, h)) in &phases {
        let _ = writeln!(out, "    {phase:<10} {l:9.3} → {h:9.3}  {}", ratio(*l, *h));
    }
    let _ = writeln!(out, "\n    log ms    here ms   ratio  calls  op (phase)");
    for o in f.ops.iter().take(15) {
        let _ = writeln!(
            out,
            "  {:8.3}   {:8.3}  {:>6}  {:5}  {} ({}){}",
            o.logged_ms,
            o.replayed_ms,
            ratio(o.logged_ms, o.replayed_ms),
            o.calls,
            o.name,
            o.phase,
            match o.method {
                UnitMethod::CarriedOver => "  [carried over]",
                UnitMethod::Added => "  [added by the what-if]",
                UnitMethod::Torch => "",
            }
        );
    }
    let skipped: Vec<_> = f
        .ops
        .iter()
        .filter(|o| o.method == UnitMethod::CarriedOver)
        .collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\n  Not replayable (logged time carried over):");
        for o in skipped {
            let _ = writeln!(
                out,
                "    {} ({}, {} call(s), {:.3} ms): {}",
                o.name,
                o.phase,
                o.calls,
                o.logged_ms,
                o.skipped.as_deref().unwrap_or("no reason given")
            );
        }
    }
    out
}

/// `logged / here` as a speed-up (`1.25x` is faster here).
fn ratio(logged: f64, here: f64) -> String {
    if here > 0.0 {
        format!("{:.2}x", logged / here)
    } else {
        "-".into()
    }
}
