//! The whole step of a trace replayed: the trace of the log's run (another run's is refused),
//! its steady iteration's units read once, and those units replayed through PyTorch with the
//! flags of `replay --torch-trace`, `plan --torch-trace` and `advise --project --torch-trace`.

use crate::{interpreter_of, replay, Options, TorchReplayError};
use profilednn_replay::framework::FrameworkReplay;
use profilednn_torchtrace::{read_trace, same_run, step_units, TorchTrace};
use std::path::{Path, PathBuf};

/// Why the trace's step could not be had; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Trace(#[from] profilednn_torchtrace::TraceError),
    #[error("cannot read the log")]
    Log(#[source] profilednn_verbose::OpenError),
    #[error(transparent)]
    AnotherRun(#[from] same_run::AnotherRun),
    #[error(
        "{}: the trace marks no iteration (`profilednn.iteration#N` ranges): record it with \
         `profilednn.profile()` around the training loop (`profilednn record --torch`)",
        .0.display()
    )]
    NoIteration(PathBuf),
    #[error(
        "{}: the trace marks no iteration (`profilednn.iteration#N` ranges), so it cannot be \
         matched with {}'s whole step",
        trace.display(),
        replay.display()
    )]
    NoIterationToMatch { trace: PathBuf, replay: PathBuf },
    #[error(transparent)]
    TraceMismatch(#[from] profilednn_replay::trace_match::TraceMismatch),
}

/// What the framework replay runs with, from the command's flags.
pub struct StepArgs<'a> {
    pub trace: &'a Path,
    pub python: Option<&'a Path>,
    /// The interpreter the log was recorded with (`recorded_python`), after `python` and
    /// `PROFILEDNN_TORCH_PYTHON`.
    pub recorded_python: Option<&'a Path>,
    /// `--threads`, else the log's thread count (as recorded).
    pub threads: Option<u64>,
    pub bf16: bool,
    pub channels_last: bool,
    pub batch: Option<u64>,
    pub warmup: u32,
    /// oneDNN's verbose mode as the log was recorded with (`Some(timestamps)`), so that the
    /// replay pays the per-primitive lines the logged step paid
    /// (`RunMetadata::verbose_recording`).
    pub onednn_verbose: Option<bool>,
}

/// The units of the trace's steady iteration (two passes over the trace: its iteration ranges,
/// then that iteration's ops with their arguments), read once however many replays use them.
/// With `log`, a trace of another run than the log's is refused (`same_run`).
pub fn units_of(path: &Path, log: Option<&Path>) -> Result<step_units::StepUnits, StepError> {
    let trace = trace_of_run(path, log)?;
    let range = step_units::steady_iteration(&trace)
        .ok_or_else(|| StepError::NoIteration(path.to_path_buf()))?;
    drop(trace);
    Ok(step_units::step_units(path, &range)?)
}

/// The trace at `path`; with `log`, refused when it is of another run than the log's
/// (`same_run`).
pub fn trace_of_run(path: &Path, log: Option<&Path>) -> Result<TorchTrace, StepError> {
    let trace = read_trace(path)?;
    if let Some(log) = log.filter(|l| l.as_os_str() != "-") {
        let input = profilednn_verbose::LogInput::open(log).map_err(StepError::Log)?;
        same_run::check(
            &trace,
            path,
            log,
            profilednn_analysis::torch_join::log_span_ms(input),
        )?;
    }
    Ok(trace)
}

/// Replays the units of the steady iteration through PyTorch as `a` says; says on stderr what
/// it replays, with which interpreter, and how long it took (minutes for a large model).
pub fn replay_units(
    a: &StepArgs,
    units: &step_units::StepUnits,
) -> Result<FrameworkReplay, TorchReplayError> {
    let range = &units.iteration;
    let python = interpreter_of(a.python, a.recorded_python);
    eprintln!(
        "profilednn: replaying the {} framework ops of iteration {} ({:.1} ms in the trace) \
         through PyTorch ({}, from {}){}",
        units.units.len(),
        range.index,
        range.wall_ms,
        python.path.display(),
        python.from,
        if a.bf16 {
            ", autocast's lower-precision ops in bf16"
        } else {
            ""
        }
    );
    let started = std::time::Instant::now();
    let r = replay(
        &a.trace.display().to_string(),
        units,
        &Options {
            python,
            threads: a.threads,
            precision: a.bf16.then(|| "bf16".to_string()),
            layout: a.channels_last.then(|| "channels-last".to_string()),
            batch: a.batch,
            warmup: a.warmup.max(1),
            runs: 5,
            under_profiler: true,
            processes: 3,
            onednn_verbose: a.onednn_verbose,
        },
    )?;
    eprintln!(
        "profilednn: framework ops replayed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(r)
}

/// `project --torch-trace`: the trace must be of the log's run and the one the replay `replay`
/// (read from `replay_path`) was made from (`profilednn_replay::trace_match`).
pub fn check_trace(
    trace: &Path,
    log: &Path,
    replay: &profilednn_replay::Replay,
    replay_path: &Path,
) -> Result<(), StepError> {
    let t = trace_of_run(trace, Some(log))?;
    let steady = step_units::steady_iteration(&t).ok_or_else(|| StepError::NoIterationToMatch {
        trace: trace.into(),
        replay: replay_path.into(),
    })?;
    profilednn_replay::trace_match::check(replay.framework.as_ref(), replay_path, trace, &steady)?;
    Ok(())
}
