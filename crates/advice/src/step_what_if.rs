//! A whole-step what-if, as the advice rules take it: the training step as recorded and
//! changed, both replayed through PyTorch on this machine (`replay --torch-trace`), so that a
//! change is judged by the step the user waits for, not by oneDNN's part of it.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct StepWhatIf {
    /// The change, as `replay` spells it (`--as bf16`).
    pub transform: String,
    /// The recorded steady step (wall time of the trace's replayed iteration).
    pub logged_step_ms: f64,
    /// The same step replayed here unchanged: the like-for-like baseline of the change; the
    /// recorded step itself when no as-recorded replay of it was made ([`StepBaseline`]).
    pub baseline_step_ms: f64,
    pub baseline: StepBaseline,
    /// The step replayed here with the change.
    pub projected_step_ms: f64,
    /// Of the changed step, the GEMM family's and attention's time, before and after (where a
    /// precision change acts).
    pub gemm_attention_ms: (f64, f64),
    /// What replayed it: PyTorch's version and the thread count.
    pub replayed_with: String,
}

/// What a whole-step what-if is measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepBaseline {
    /// The step replayed here as recorded, with the same PyTorch and threads: like with like.
    ReplayedAsRecorded,
    /// The recorded step: no as-recorded replay of the whole step was given (`--replay` of one
    /// what-if's file), so the replay's own error is in the ratio.
    Recorded,
}

impl StepBaseline {
    /// `the step replayed as recorded` / `the recorded step`, for sentences.
    pub fn name(self) -> &'static str {
        match self {
            StepBaseline::ReplayedAsRecorded => "the step replayed as recorded",
            StepBaseline::Recorded => "the recorded step",
        }
    }
}

/// The range of `baseline / logged` (the step replayed as recorded over the recorded step) in
/// which the replay is taken as the same step. Outside it the replay misses or repeats a large
/// part of the step, or the machine was busy during one of the two runs: at 2× half of what
/// one of them timed is not in the other, so a ratio measured against the replay says nothing
/// about the recorded step. A transformer's as-recorded replay ran 12.98× its 254 ms step and
/// its bf16 "gain" of 2178.8 ms per iteration was ranked first.
pub const TRUSTED_DRIFT: (f64, f64) = (0.5, 2.0);

impl StepWhatIf {
    /// The as-recorded replay over the recorded step (1: the replay is the step).
    pub fn drift(&self) -> f64 {
        self.baseline_step_ms / self.logged_step_ms.max(1e-9)
    }

    /// Whether the replay is close enough to the recorded step for its ratio to say anything
    /// about it ([`TRUSTED_DRIFT`]).
    pub fn trusted(&self) -> bool {
        let (lo, hi) = TRUSTED_DRIFT;
        self.logged_step_ms > 0.0 && (lo..=hi).contains(&self.drift())
    }

    /// The time the change saves per iteration of the *recorded* step: the replays' ratio
    /// applied to it (`logged × (1 − projected / baseline)`), so it never exceeds the step;
    /// `None` when the replay is not [`trusted`](Self::trusted) (no gain, nothing to rank by).
    pub fn gain_per_iteration_ms(&self) -> Option<f64> {
        (self.trusted() && self.baseline_step_ms > 0.0)
            .then(|| self.logged_step_ms * (1.0 - self.projected_step_ms / self.baseline_step_ms))
    }

    /// `baseline / projected`: above 1 the change is faster.
    pub fn speedup(&self) -> f64 {
        if self.projected_step_ms > 0.0 {
            self.baseline_step_ms / self.projected_step_ms
        } else {
            1.0
        }
    }
}
