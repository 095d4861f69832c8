//! `advise --project --torch-trace`: the whole-step what-ifs the rules judge, each replayed
//! through PyTorch against the step replayed as recorded (like with like).

use super::step::StepProjection;
use profilednn_advice::{StepBaseline, StepWhatIf};
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

/// Of a step, the GEMM family's and attention's projected time (where a precision change acts).
pub fn gemm_attention(s: &StepProjection) -> f64 {
    ["gemm", "attention"]
        .iter()
        .filter_map(|k| s.by_family.get(*k))
        .map(|p| p.projected_ms)
        .sum()
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
        gemm_attention_ms: (gemm_attention(&base), gemm_attention(&bf16)),
        replayed_with: format!("PyTorch {} at {} thread(s)", bf16.torch, bf16.threads),
    }])
}
