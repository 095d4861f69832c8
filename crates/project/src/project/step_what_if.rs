//! `advise --project --torch-trace`: the whole-step what-ifs the rules judge, each replayed
//! through PyTorch against the step replayed as recorded (like with like).

use super::step::StepProjection;
use profilednn_advice::{Projected, StepBaseline, StepWhatIf};
use profilednn_torchreplay::step::{replay_units, units_of, StepArgs, StepError};
use profilednn_torchreplay::TorchReplayError;
use std::path::Path;

/// Why a whole-step what-if could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum StepWhatIfError {
    #[error(transparent)]
    Step(#[from] StepError),
    #[error(transparent)]
    Replay(#[from] TorchReplayError),
}

/// Of a step, the GEMM family's and attention's time (where a precision change acts), as
/// logged and as projected.
pub fn gemm_attention(s: &StepProjection) -> (f64, f64) {
    ["gemm", "attention"]
        .iter()
        .filter_map(|k| s.by_family.get(*k))
        .fold((0.0, 0.0), |(l, p), part| {
            (l + part.logged_ms, p + part.projected_ms)
        })
}

/// `advise --project --torch-trace`: the whole-step what-ifs the rules judge, each against the
/// step replayed as recorded (like with like): bf16 autocast.
///
/// `log`: the recording, whose `recorded_python` line names the interpreter that ran it (the
/// bare binary, without the venv on PATH, finds torch there).
pub fn what_ifs(
    trace: &Path,
    log: Option<&Path>,
    threads: Option<u64>,
    onednn_verbose: Option<bool>,
) -> Result<Vec<StepWhatIf>, StepWhatIfError> {
    let units = units_of(trace, None)?;
    let recorded = log.and_then(profilednn_torchtrace::recorded_python::of_log);
    let run = |bf16| {
        replay_units(
            &StepArgs {
                trace,
                python: None,
                recorded_python: recorded.as_deref(),
                threads,
                bf16,
                channels_last: false,
                batch: None,
                warmup: 1,
                onednn_verbose,
            },
            &units,
        )
        .map(|f| StepProjection::of(&f))
    };
    let base = run(false)?;
    let bf16 = run(true)?;
    Ok(vec![StepWhatIf {
        transform: "--as bf16".into(),
        logged_step_ms: base.logged_step_ms,
        baseline_step_ms: base.projected_step_ms,
        baseline: StepBaseline::ReplayedAsRecorded,
        projected_step_ms: bf16.projected_step_ms,
        gemm_attention_ms: (gemm_attention(&base).1, gemm_attention(&bf16).1),
        replayed_with: format!("PyTorch {} at {} thread(s)", bf16.torch, bf16.threads),
    }])
}

/// The whole-step what-ifs of the replay files that replayed the whole step, each with its
/// projection (in file order): each against a file among them that replayed the whole step as
/// recorded with the same PyTorch and threads (like with like), else (and the as-recorded file
/// itself) against the recorded step.
pub fn of_replays(steps: &[(&Projected, StepProjection)]) -> Vec<StepWhatIf> {
    steps
        .iter()
        .enumerate()
        .map(|(i, (p, s))| {
            // Another file: the as-recorded replay itself is set against the recorded step.
            let as_recorded = steps.iter().enumerate().find_map(|(j, (b, bs))| {
                (j != i
                    && b.change == Default::default()
                    && bs.precision.is_none()
                    && (&bs.torch, bs.threads) == (&s.torch, s.threads))
                    .then_some((b, bs))
            });
            // As recorded: the baseline replay's step and GEMMs and attention, or the trace's.
            let (baseline_step_ms, baseline, base_gemm) = match as_recorded {
                Some((_, b)) => (
                    b.projected_step_ms,
                    StepBaseline::ReplayedAsRecorded,
                    gemm_attention(b).1,
                ),
                None => (
                    s.logged_step_ms,
                    StepBaseline::Recorded,
                    gemm_attention(s).0,
                ),
            };
            StepWhatIf {
                transform: p.transform.clone(),
                logged_step_ms: s.logged_step_ms,
                baseline_step_ms,
                baseline,
                projected_step_ms: s.projected_step_ms,
                gemm_attention_ms: (base_gemm, gemm_attention(s).1),
                replayed_with: format!("PyTorch {} at {} thread(s)", s.torch, s.threads),
            }
        })
        .collect()
}
