//! The whole step projected from a replay's `framework` section: every framework op of the
//! replayed iteration at its time here (or its logged time, carried over, when it could not
//! be replayed), and the iteration's time outside the ops carried over unchanged.
//!
//! The rule for the time outside the ops (Python between the ops, the autograd engine's own
//! work): carried over as logged, whatever the what-if. It does not scale with the threads
//! (one Python thread runs it) nor with the precision; it would with the batch only through
//! per-sample Python, which a training loop does not have.

use profilednn_replay::framework::{FrameworkOpResult, FrameworkReplay, UnitMethod};
use serde::Serialize;
use std::collections::BTreeMap;

/// Logged and projected time of one part of the step.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Part {
    pub logged_ms: f64,
    pub projected_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepProjection {
    /// The trace's iteration replayed.
    pub iteration: u64,
    pub logged_step_ms: f64,
    pub projected_step_ms: f64,
    /// The framework ops replayed through PyTorch: logged and here.
    pub replayed_ops: Part,
    /// Ops that could not be replayed, at their logged time.
    pub carried_over_ms: f64,
    /// Calls the what-if adds, which the trace does not have (the bf16 what-if's casts of
    /// weight gradients and of the loss's input), at their time here; 0 as recorded.
    pub added_ms: f64,
    /// The iteration's time outside its ops, carried over.
    pub outside_ops_ms: f64,
    /// `replayed.logged_ms / logged_step_ms`: how much of the step the replay measured.
    pub replayed_share: f64,
    pub threads: u64,
    /// `bf16` for the bf16 what-if, else absent (as recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<String>,
    pub torch: String,
    /// forward, loss, backward, optimizer, zero_grad, data; and outside the ops.
    pub by_phase: BTreeMap<String, Part>,
    /// gemm, attention, normalization, elementwise, other (ops without a cost family).
    pub by_family: BTreeMap<String, Part>,
    /// Where the step runs, as recorded and here ([`runs_in`]): `oneDNN`, `BLAS`, `ATen`,
    /// `carried over`, `Python/dispatch`. An op's two times may fall in different classes
    /// (the bf16 what-if moves a GEMM from the BLAS to oneDNN).
    pub by_runs_in: BTreeMap<String, Part>,
}

/// Where a replayed op runs, as recorded (`here` false) or here: convolutions in oneDNN
/// (PyTorch's CPU convolution is oneDNN's); GEMMs in oneDNN when recorded with bf16/f16
/// tensors or under the bf16 what-if (autocast routes them there), else in the BLAS; the rest
/// in ATen. An op recorded under autocast with f32 arguments (`aten::linear`, which casts
/// inside) is low precision too: its nested casts say so (the trace's `autocast`).
pub fn runs_in(o: &FrameworkOpResult, here: bool, bf16_what_if: bool) -> &'static str {
    if o.method == UnitMethod::CarriedOver {
        "carried over"
    } else if o.name.contains("conv") {
        "oneDNN"
    } else if o.family.as_deref() == Some("gemm") {
        if o.low_precision || (here && bf16_what_if) {
            "oneDNN"
        } else {
            "BLAS"
        }
    } else {
        "ATen"
    }
}

/// Logged and projected time by class, each time in its own side's class.
fn by_runs_in(f: &FrameworkReplay) -> BTreeMap<String, Part> {
    let bf16 = f.precision.as_deref() == Some("bf16");
    let mut m: BTreeMap<String, Part> = BTreeMap::new();
    for o in &f.ops {
        m.entry(runs_in(o, false, bf16).into())
            .or_default()
            .logged_ms += o.logged_ms;
        m.entry(runs_in(o, true, bf16).into())
            .or_default()
            .projected_ms += o.replayed_ms;
    }
    let outside = m.entry("Python/dispatch".into()).or_default();
    outside.logged_ms += f.outside_units_ms;
    outside.projected_ms += f.outside_units_ms;
    m
}

impl StepProjection {
    pub fn of(f: &FrameworkReplay) -> StepProjection {
        let (logged, here) = f.replayed();
        let part = |m: BTreeMap<String, (f64, f64)>| -> BTreeMap<String, Part> {
            m.into_iter()
                .map(|(k, (logged_ms, projected_ms))| {
                    (
                        k,
                        Part {
                            logged_ms,
                            projected_ms,
                        },
                    )
                })
                .collect()
        };
        let mut by_phase = part(f.by(|o| o.phase.to_string()));
        by_phase.insert(
            "outside_ops".into(),
            Part {
                logged_ms: f.outside_units_ms,
                projected_ms: f.outside_units_ms,
            },
        );
        let by_family = part(f.by(|o| {
            if o.method == UnitMethod::CarriedOver {
                "carried_over".into()
            } else {
                o.family.clone().unwrap_or_else(|| "other".into())
            }
        }));
        StepProjection {
            iteration: f.iteration,
            logged_step_ms: f.logged_step_ms,
            projected_step_ms: f.projected_step_ms(),
            replayed_ops: Part {
                logged_ms: logged,
                projected_ms: here,
            },
            carried_over_ms: f.carried_over_ms(),
            added_ms: f.added().1,
            outside_ops_ms: f.outside_units_ms,
            replayed_share: if f.logged_step_ms > 0.0 {
                logged / f.logged_step_ms
            } else {
                0.0
            },
            threads: f.threads,
            precision: f.precision.clone(),
            torch: f.torch.clone(),
            by_phase,
            by_family,
            by_runs_in: by_runs_in(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_torchtrace::Phase;

    fn op(
        name: &str,
        phase: Phase,
        method: UnitMethod,
        logged: f64,
        here: f64,
    ) -> FrameworkOpResult {
        FrameworkOpResult {
            name: name.into(),
            phase,
            family: (name == "aten::mm").then(|| "gemm".into()),
            method,
            calls: 1,
            logged_ms: logged,
            replayed_ms: here,
            skipped: None,
            low_precision: false,
        }
    }

    /// By hand: a 10 ms step of a 4 ms mm (2 ms here), a 1 ms add_ (1.5 ms here), a 0.5 ms op
    /// not replayable (carried over) and 4.5 ms outside the ops: 2 + 1.5 + 0.5 + 4.5 = 8.5 ms.
    #[test]
    fn the_step_is_the_ops_here_plus_the_rest_as_logged() {
        let f = FrameworkReplay {
            trace: "t".into(),
            iteration: 2,
            iterations: 4,
            logged_step_ms: 10.0,
            outside_units_ms: 4.5,
            python: "python3".into(),
            torch: "2.15.0".into(),
            threads: 2,
            precision: None,
            layout: None,
            batch: None,
            under_profiler: true,
            timing: "profiler events".into(),
            processes: 3,
            onednn_verbose: false,
            ops: vec![
                op("aten::mm", Phase::Backward, UnitMethod::Torch, 4.0, 2.0),
                op("aten::add_", Phase::Optimizer, UnitMethod::Torch, 1.0, 1.5),
                op(
                    "aten::weird",
                    Phase::Forward,
                    UnitMethod::CarriedOver,
                    0.5,
                    0.5,
                ),
            ],
        };
        let s = StepProjection::of(&f);
        assert!((s.projected_step_ms - 8.5).abs() < 1e-12);
        assert!((s.replayed_ops.logged_ms - 5.0).abs() < 1e-12);
        assert!((s.replayed_ops.projected_ms - 3.5).abs() < 1e-12);
        assert!((s.carried_over_ms - 0.5).abs() < 1e-12);
        assert!((s.replayed_share - 0.5).abs() < 1e-12);
        assert!((s.by_phase["backward"].projected_ms - 2.0).abs() < 1e-12);
        assert!((s.by_phase["outside_ops"].projected_ms - 4.5).abs() < 1e-12);
        assert!((s.by_family["gemm"].logged_ms - 4.0).abs() < 1e-12);
        assert!((s.by_family["carried_over"].projected_ms - 0.5).abs() < 1e-12);
        assert!((s.by_family["other"].projected_ms - 1.5).abs() < 1e-12);
        // Where it runs, as recorded: the mm in the BLAS (f32), add_ in ATen.
        assert!((s.by_runs_in["BLAS"].logged_ms - 4.0).abs() < 1e-12);
        assert!((s.by_runs_in["ATen"].projected_ms - 1.5).abs() < 1e-12);
        assert!((s.by_runs_in["carried over"].logged_ms - 0.5).abs() < 1e-12);
        assert!((s.by_runs_in["Python/dispatch"].projected_ms - 4.5).abs() < 1e-12);
        assert_eq!(s.added_ms, 0.0);
        // A cast the what-if adds (0.7 ms here, none logged) counts in the step, its phase and
        // its family: 8.5 + 0.7 = 9.2 ms.
        let mut cast = op("aten::to", Phase::Backward, UnitMethod::Added, 0.0, 0.7);
        cast.family = Some("elementwise".into());
        let mut with_cast = f.clone();
        with_cast.ops.push(cast);
        let s = StepProjection::of(&with_cast);
        assert!((s.projected_step_ms - 9.2).abs() < 1e-12);
        assert!((s.added_ms - 0.7).abs() < 1e-12);
        assert!((s.replayed_ops.projected_ms - 3.5).abs() < 1e-12);
        assert!((s.by_phase["backward"].projected_ms - 2.7).abs() < 1e-12);
        assert_eq!(
            (
                s.by_family["elementwise"].logged_ms,
                s.by_family["elementwise"].projected_ms
            ),
            (0.0, 0.7)
        );
        assert!((s.by_runs_in["ATen"].projected_ms - 2.2).abs() < 1e-12);
        // The bf16 what-if: the mm is the BLAS's as recorded, oneDNN's here.
        let bf16 = FrameworkReplay {
            precision: Some("bf16".into()),
            ..f.clone()
        };
        let s = StepProjection::of(&bf16);
        assert_eq!(
            (
                s.by_runs_in["BLAS"].logged_ms,
                s.by_runs_in["BLAS"].projected_ms
            ),
            (4.0, 0.0)
        );
        assert_eq!(
            (
                s.by_runs_in["oneDNN"].logged_ms,
                s.by_runs_in["oneDNN"].projected_ms
            ),
            (0.0, 2.0)
        );
        // Recorded with bf16 tensors: oneDNN on both sides.
        let mut low = f.clone();
        low.ops[0].low_precision = true;
        let s = StepProjection::of(&low);
        assert_eq!(s.by_runs_in["oneDNN"].logged_ms, 4.0);
        assert!(!s.by_runs_in.contains_key("BLAS"));
    }
}
