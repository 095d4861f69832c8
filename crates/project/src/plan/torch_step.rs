//! `plan --torch-trace`: the plan of the whole step. The trace gives the batch the ranks divide
//! (as the whole-step replay reads it from the tensors) and the gradients they all-reduce (the
//! parameters autograd accumulated); each valid split's rank replays the trace's steady
//! iteration through PyTorch at its threads and mini-batch.

use super::{Plan, WholeStep};
use crate::project::step::StepProjection;
use profilednn_torchreplay::step::{replay_units, units_of, StepArgs, StepError};
use profilednn_torchtrace::step_params::{gradients, Gradients};
use profilednn_torchtrace::{step_batch::recorded_batch, step_units::StepUnits};
use std::path::{Path, PathBuf};

/// Why the trace cannot be planned from; each says how to record one that can.
#[derive(Debug, thiserror::Error)]
pub enum StepReadError {
    #[error(transparent)]
    Step(#[from] StepError),
    #[error(
        "{}: the batch cannot be read from the steady iteration's tensors (no forward op with \
         an activation, or a batch of 1): record the trace with shapes (`profilednn record \
         --torch`) at a batch of 2 or more",
        .0.display()
    )]
    NoBatch(PathBuf),
    #[error(
        "{}: the steady iteration accumulates no gradient (no `AccumulateGrad` with a recorded \
         shape): plan needs a training step recorded with shapes (`profilednn record --torch`)",
        .0.display()
    )]
    NoGradients(PathBuf),
}

/// The trace's steady iteration, read once for every split.
pub struct Step {
    /// The trace the units were read from (the replay reads it again).
    pub trace: PathBuf,
    pub units: StepUnits,
    pub batch: u64,
    pub gradients: Gradients,
    /// The interpreter the log was recorded with (its `recorded_python` line), for the
    /// replays.
    pub recorded_python: Option<PathBuf>,
}

/// Reads `trace`'s steady iteration, its batch and its gradients; a trace of another run than
/// `log`'s is refused.
pub fn read(trace: &Path, log: &Path) -> Result<Step, StepReadError> {
    let units = units_of(trace, Some(log))?;
    let batch = recorded_batch(&units).ok_or_else(|| StepReadError::NoBatch(trace.into()))?;
    let gradients = gradients(&units).ok_or_else(|| StepReadError::NoGradients(trace.into()))?;
    Ok(Step {
        trace: trace.to_path_buf(),
        units,
        batch,
        gradients,
        recorded_python: profilednn_torchtrace::recorded_python::of_log(log),
    })
}

/// The plan's whole-step record of `step` (before any replay).
pub fn whole_step(step: &Step) -> WholeStep {
    WholeStep {
        trace: step.trace.display().to_string(),
        iteration: step.units.iteration.index,
        logged_step_ms: step.units.iteration.wall_ms,
        recorded_batch: step.batch,
        gradient_tensors: step.gradients.tensors,
        torch: None,
    }
}

/// Replays the whole step of every valid split (its rank alone, at its threads and
/// mini-batch) and sets the rows; a split that fails gets a note.
pub fn replay_rows(
    plan: &mut Plan,
    python: Option<&Path>,
    step: &Step,
    onednn_verbose: Option<bool>,
) {
    let todo = plan.to_replay();
    for (split, threads, batch) in todo {
        eprintln!(
            "profilednn: replaying split {split}'s whole step: {threads} thread(s), mini-batch {batch}"
        );
        let replayed = replay_units(
            &StepArgs {
                trace: &step.trace,
                python,
                recorded_python: step.recorded_python.as_deref(),
                threads: Some(threads),
                bf16: false,
                channels_last: false,
                batch: (batch != step.batch).then_some(batch),
                warmup: 1,
                onednn_verbose,
            },
            &step.units,
        );
        let f = match replayed {
            Ok(f) => f,
            Err(e) => {
                plan.note(split, format!("not replayed: {e:#}"));
                continue;
            }
        };
        let s = StepProjection::of(&f);
        plan.set_step(
            split,
            s.replayed_ops.projected_ms + s.carried_over_ms + s.added_ms,
            s.outside_ops_ms,
        );
        if s.carried_over_ms > 0.0 {
            plan.note(
                split,
                format!(
                    "{:.1} ms of ops not replayed (at their logged time)",
                    s.carried_over_ms
                ),
            );
        }
        if let Some(ws) = plan.whole_step.as_mut() {
            ws.torch = Some(format!("{} (PyTorch {})", f.python, f.torch));
        }
    }
}
