//! What `torch.compile` costs and when it pays back, from the PyTorch traces alone.
//!
//! A compiled model's log often holds no oneDNN line (Inductor generates the element-wise code
//! in C++), so the log's iteration markers carry no timestamp and the log gives no step. The
//! trace's iteration ranges do: the steady step is taken from them as the log's headline takes
//! it from its markers (the median over the steady iterations), with the iterations that
//! compiled left out. The compile warm-up is what the first compiled step took beyond a steady
//! one: Dynamo and Inductor's own events miss the work they trigger outside themselves (the
//! first backward's compile, autotuning, loading the generated library).

use crate::iterations::steady_median;
use crate::ranks::SteadyStep;
use profilednn_torchtrace::TorchJoin;
use serde::Serialize;

/// The steady step of a trace's iteration ranges (`profilednn.iteration#N`): the medians over
/// the steady iterations (the first third left out as warm-up, as for a log's markers), the
/// iterations that compiled never counted. `None` without an iteration range, or when every
/// steady candidate compiled.
pub fn trace_step(j: &TorchJoin) -> Option<SteadyStep> {
    let steady = |f: &dyn Fn(&profilednn_torchtrace::IterationRow) -> f64| -> Vec<Option<f64>> {
        j.per_iteration
            .iter()
            .map(|r| j.compiling.iter().all(|c| c.index != r.index).then(|| f(r)))
            .collect()
    };
    let (wall_ms, iterations) = steady_median(&[steady(&|r| r.time_ms)])?;
    let (onednn_ms, _) = steady_median(&[steady(&|r| r.onednn_ms)])?;
    let (outside_ms, _) = steady_median(&[steady(&|r| (r.time_ms - r.onednn_ms).max(0.0))])?;
    Some(SteadyStep {
        wall_ms,
        outside_ms,
        onednn_ms,
        iterations,
    })
}

/// The wall times of the iterations [`trace_step`]'s median is over (the same warm-up and
/// compiling iterations left out), in order: the step's own spread, which tells a difference
/// between two runs from the noise of a shared machine.
pub fn steady_walls(j: &TorchJoin) -> Vec<f64> {
    let n = j.per_iteration.len();
    let warm = crate::iterations::warm_up_calls(n as u64).max(1) as usize;
    j.per_iteration
        .iter()
        .skip(warm)
        .filter(|r| j.compiling.iter().all(|c| c.index != r.index))
        .map(|r| r.time_ms)
        .collect()
}

/// The compile warm-up of a compiled run: the iterations that compiled, against its steady step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WarmUp {
    /// The iterations that compiled (the first call; recompilations after it).
    pub iterations: Vec<u64>,
    /// The first compiling iteration's wall time.
    pub first_step_ms: f64,
    /// The steady step ([`trace_step`]) the warm-up is measured against.
    pub steady_step_ms: f64,
    /// What compiling added: each compiling iteration's wall time less a steady step, summed.
    pub compile_ms: f64,
    /// Dynamo and Inductor's own events in those iterations (a lower bound of `compile_ms`).
    pub compile_events_ms: f64,
}

/// The warm-up of `j`; `None` when no iteration compiled or the run has no steady step.
pub fn warm_up(j: &TorchJoin) -> Option<WarmUp> {
    // A steady join's warm-up iteration (`join_steady`) sits in `compiling` with no compile
    // time: it is left out of the figures, but it did not compile.
    let compiled: Vec<&profilednn_torchtrace::compiled::Compiling> = j
        .compiling
        .iter()
        .filter(|c| Some(c.index) != j.warm_up)
        .collect();
    let first = *compiled.first()?;
    let steady = trace_step(j)?.wall_ms;
    let wall = |index: u64| {
        j.per_iteration
            .iter()
            .find(|r| r.index == index)
            .map(|r| r.time_ms)
    };
    Some(WarmUp {
        iterations: compiled.iter().map(|c| c.index).collect(),
        first_step_ms: wall(first.index)?,
        steady_step_ms: steady,
        compile_ms: compiled
            .iter()
            .filter_map(|c| wall(c.index))
            .map(|w| (w - steady).max(0.0))
            .sum(),
        compile_events_ms: compiled.iter().map(|c| c.compile_ms).sum(),
    })
}

/// Compiling against its eager twin: the steady saving per step and the steps it takes to
/// earn the compile time back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Payback {
    pub compile_ms: f64,
    /// The eager step less the compiled one (negative: compiled is slower).
    pub saving_ms_per_step: f64,
    /// Steps until the saving covers the compile time; `None` when compiled is not faster.
    pub steps: Option<u64>,
}

/// Payback of the compiled run `compiled` against the eager run `eager`; `None` unless
/// `compiled` compiled and both have a steady step.
pub fn payback(eager: &TorchJoin, compiled: &TorchJoin) -> Option<Payback> {
    let w = warm_up(compiled)?;
    let saving = trace_step(eager)?.wall_ms - w.steady_step_ms;
    Some(Payback {
        compile_ms: w.compile_ms,
        saving_ms_per_step: saving,
        steps: (saving > 0.0).then(|| (w.compile_ms / saving).ceil() as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_torchtrace::{compiled::Compiling, IterationRow};

    fn run(walls: &[f64], compiling: &[(u64, f64)]) -> TorchJoin {
        TorchJoin {
            per_iteration: walls
                .iter()
                .enumerate()
                .map(|(i, &time_ms)| IterationRow {
                    index: i as u64,
                    time_ms,
                    onednn_ms: 1.0,
                    ..Default::default()
                })
                .collect(),
            compiling: compiling
                .iter()
                .map(|&(index, compile_ms)| Compiling {
                    index,
                    start: 0.0,
                    end: 0.0,
                    compile_ms,
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Eager 81, 28, 29, 26 ms: the first 2 of 4 are warm-up, the step the median of 29 and 26.
    /// Compiled 3200 (compiling, 3000 ms of events), 19, 18, 17: the same steady iterations, a
    /// 17.5 ms step; compiling cost 3200 − 17.5 = 3182.5 ms, saving 10 ms a step: 319 steps.
    #[test]
    fn steady_step_warm_up_and_payback_by_hand() {
        let eager = run(&[81.0, 28.0, 29.0, 26.0], &[]);
        let s = trace_step(&eager).unwrap();
        assert_eq!((s.wall_ms, s.onednn_ms, s.outside_ms), (27.5, 1.0, 26.5));
        assert_eq!(s.iterations, 2);
        let compiled = run(&[3200.0, 19.0, 18.0, 17.0], &[(0, 3000.0)]);
        assert_eq!(trace_step(&compiled).unwrap().wall_ms, 17.5);
        let w = warm_up(&compiled).unwrap();
        assert_eq!(w.iterations, [0]);
        assert_eq!((w.first_step_ms, w.compile_ms), (3200.0, 3182.5));
        assert_eq!(w.compile_events_ms, 3000.0);
        let p = payback(&eager, &compiled).unwrap();
        assert_eq!(p.saving_ms_per_step, 10.0);
        assert_eq!(p.steps, Some(319));
        // Compiled slower: never pays back. An eager run has no warm-up.
        let slow = run(&[3200.0, 39.0, 38.0, 37.0], &[(0, 3000.0)]);
        assert_eq!(payback(&eager, &slow).unwrap().steps, None);
        assert!(warm_up(&eager).is_none());
        // A recompilation at iteration 2 is left out of the step too, and adds its own cost.
        let re = run(
            &[3200.0, 19.0, 500.0, 17.0, 18.0, 16.0],
            &[(0, 3000.0), (2, 400.0)],
        );
        let w = warm_up(&re).unwrap();
        assert_eq!(w.steady_step_ms, 17.0);
        assert_eq!(w.compile_ms, 3183.0 + 483.0);
    }
}
