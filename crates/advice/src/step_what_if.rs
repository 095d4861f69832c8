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
    /// The same step replayed here unchanged: the like-for-like baseline of the change.
    pub baseline_step_ms: f64,
    /// The step replayed here with the change.
    pub projected_step_ms: f64,
    /// Of the changed step, the GEMM family's and attention's time, before and after (where a
    /// precision change acts).
    pub gemm_attention_ms: (f64, f64),
    /// What replayed it: PyTorch's version and the thread count.
    pub replayed_with: String,
}

impl StepWhatIf {
    /// `baseline / projected`: above 1 the change is faster.
    pub fn speedup(&self) -> f64 {
        if self.projected_step_ms > 0.0 {
            self.baseline_step_ms / self.projected_step_ms
        } else {
            1.0
        }
    }
}
