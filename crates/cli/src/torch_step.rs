//! `replay --torch-trace`: the framework ops of the trace's steady iteration, replayed through
//! PyTorch beside the oneDNN replay (the whole step).

use anyhow::{Context, Result};
use profilednn_replay::framework::FrameworkReplay;
use profilednn_torchreplay::{interpreter_of, Options};
use profilednn_torchtrace::{read_trace, same_run, step_units, TorchTrace};
use std::path::Path;

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
pub fn units_of(path: &Path, log: Option<&Path>) -> Result<step_units::StepUnits> {
    let trace = trace_of_run(path, log)?;
    let range = step_units::steady_iteration(&trace).with_context(|| {
        format!(
            "{}: the trace marks no iteration (`profilednn.iteration#N` ranges): record it with \
             `profilednn.profile()` around the training loop (`profilednn record --torch`)",
            path.display()
        )
    })?;
    drop(trace);
    Ok(step_units::step_units(path, &range)?)
}

/// The trace at `path`; with `log`, refused when it is of another run than the log's
/// (`same_run`).
pub fn trace_of_run(path: &Path, log: Option<&Path>) -> Result<TorchTrace> {
    let trace = read_trace(path)?;
    if let Some(log) = log.filter(|l| l.as_os_str() != "-") {
        let input = profilednn_verbose::LogInput::open(log).context("cannot read the log")?;
        same_run::check(
            &trace,
            path,
            log,
            profilednn_analysis::torch_join::log_span_ms(input),
        )?;
    }
    Ok(trace)
}

pub fn replay_units(a: &StepArgs, units: &step_units::StepUnits) -> Result<FrameworkReplay> {
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
    let r = profilednn_torchreplay::replay(
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

/// Of a step, the GEMM family's and attention's projected time (where a precision change acts).
pub fn gemm_attention(s: &profilednn_project::project::step::StepProjection) -> f64 {
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
) -> Result<Vec<profilednn_advice::StepWhatIf>> {
    use profilednn_project::project::step::StepProjection;
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
    Ok(vec![profilednn_advice::StepWhatIf {
        transform: "--as bf16".into(),
        logged_step_ms: base.logged_step_ms,
        baseline_step_ms: base.projected_step_ms,
        baseline: profilednn_advice::StepBaseline::ReplayedAsRecorded,
        projected_step_ms: bf16.projected_step_ms,
        gemm_attention_ms: (gemm_attention(&base), gemm_attention(&bf16)),
        replayed_with: format!("PyTorch {} at {} thread(s)", bf16.torch, bf16.threads),
    }])
}
