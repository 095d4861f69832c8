//! `compile-warm-up`: what `torch.compile` cost this run. Compiling is paid once per process
//! (seconds to minutes on a CPU), the saving once per step: whether it pays depends on the
//! run's length, which a single run cannot judge. The saving per step needs the eager twin,
//! which `diff --torch-trace EAGER COMPILED` has (its payback line).

use super::*;
use profilednn_analysis::compile_cost::warm_up;

pub const ID: &str = "compile-warm-up";

pub fn check(ev: &Evidence, _: &Thresholds) -> Result<Finding, String> {
    let j = ev.torch.ok_or(
        "no PyTorch trace (record with `profilednn record --torch`, pass --torch-trace) (not applicable)",
    )?;
    let w = warm_up(j).ok_or("no iteration compiled, or no steady one to set it against")?;
    let steps = w.compile_ms / w.steady_step_ms.max(1e-9);
    Ok(finding(
        ev,
        ID,
        format!(
            "compiling costs {:.1} s: the first compiled step took {:.1} s against a steady step \
             of {:.3} ms (the time of {steps:.0} steady steps)",
            w.compile_ms / 1e3,
            w.first_step_ms / 1e3,
            w.steady_step_ms
        ),
        map(vec![
            ("compile_ms", json!(w.compile_ms)),
            ("first_step_ms", json!(w.first_step_ms)),
            ("steady_step_ms", json!(w.steady_step_ms)),
            ("compile_events_ms", json!(w.compile_events_ms)),
            ("compiling_iterations", json!(w.iterations)),
        ]),
        None,
        "not a gain: the compile cost, paid once per process",
        "Compiling pays only if the steps it saves outweigh it: record the eager twin and run \
         `profilednn diff EAGER.log COMPILED.log --torch-trace EAGER.trace.json COMPILED.trace.json`, \
         which gives the saving per step and the steps it takes to pay the compile back, or \
         `profilednn advise COMPILED.log --torch-trace COMPILED.trace.json --against EAGER.log \
         EAGER.trace.json` for the verdict and why. A \
         persistent Inductor cache (TORCHINDUCTOR_CACHE_DIR) makes later runs compile faster.",
    ))
}
