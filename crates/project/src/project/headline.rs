//! The one figure a projection leads with (issue 52). A replay with the whole step projects two
//! training steps otherwise — the whole step replayed through PyTorch, and the oneDNN part with
//! the rest carried over — which disagree, and a reader cannot tell which to believe. The whole
//! step measured more of the step, so it is the headline; the oneDNN-only figure is a labelled
//! part of it ("of which oneDNN"), not a second step.

use super::Projection;
use profilednn_analysis::scale::Scale;
use serde::Serialize;

/// What the headline is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum HeadlineBasis {
    /// The step replayed through PyTorch (`step`): framework ops and oneDNN together.
    WholeStep,
    /// oneDNN projected, the time outside it carried over (`projected_total_ms`).
    TrainingStep,
    /// oneDNN alone: the time outside it is not known.
    #[default]
    Onednn,
}

/// A part of the headline, logged and projected.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HeadlinePart {
    pub logged_ms: f64,
    pub projected_ms: f64,
}

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Headline {
    pub basis: HeadlineBasis,
    pub logged_ms: f64,
    pub projected_ms: f64,
    /// `projected_ms / logged_ms − 1` (0 for nothing logged).
    pub change: f64,
    /// The oneDNN-only projection (the log's primitives replayed or set against the roofline)
    /// as a part of a step headline; `None` when the headline is oneDNN itself, or when it is
    /// over the whole log while the step is per iteration (no part of it then).
    pub of_which_onednn: Option<HeadlinePart>,
}

impl Headline {
    /// The whole step when projected, else the training step when the time outside oneDNN is
    /// known, else oneDNN.
    pub fn of(p: &Projection) -> Headline {
        let onednn = HeadlinePart {
            logged_ms: p.logged_onednn_ms,
            projected_ms: p.projected_onednn_ms,
        };
        let (basis, logged, projected, part) =
            match (&p.step, p.logged_total_ms, p.projected_total_ms) {
                (Some(s), _, _) => (
                    HeadlineBasis::WholeStep,
                    s.logged_step_ms,
                    s.projected_step_ms,
                    // The whole step is one iteration: a oneDNN figure of the whole log is no part.
                    (p.scale == Scale::PerIteration).then_some(onednn),
                ),
                (None, Some(l), Some(pr)) => (HeadlineBasis::TrainingStep, l, pr, Some(onednn)),
                _ => (
                    HeadlineBasis::Onednn,
                    onednn.logged_ms,
                    onednn.projected_ms,
                    None,
                ),
            };
        Headline {
            basis,
            logged_ms: logged,
            projected_ms: projected,
            change: if logged > 0.0 {
                projected / logged - 1.0
            } else {
                0.0
            },
            of_which_onednn: part,
        }
    }
}
