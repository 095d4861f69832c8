//! Replay results files (`profilednn replay -o R.json`) read back and projected onto their log:
//! shared by `project`, and by `advise`/`report --replay`, so that advice states the figures
//! `project` prints for the same files.

use anyhow::{bail, Context, Result};
use profilednn_analysis::Profile;
use profilednn_project::project::mismatch;
pub use profilednn_project::project::mismatch::Mismatch;
use profilednn_project::project::Projection;
use profilednn_replay::Replay;
use profilednn_torchtrace::step_units;
use std::path::Path;

/// A `profilednn replay` result; a file of another kind (a log, a trace) is refused naming
/// what it is and what makes a replay file.
pub fn load(path: &Path) -> Result<Replay> {
    use profilednn_verbose::FileKind;
    let refusal = FileKind::of_file(path)
        .ok()
        .and_then(|k| k.refusal(path, FileKind::ReplayResults));
    if let Some(m) = refusal {
        bail!("{m}");
    }
    Replay::from_json(
        &std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?,
    )
    .with_context(|| path.display().to_string())
}

/// `project --torch-trace`: the trace must be of the log's run and the one `replay` (read from
/// `replay_path`) was made from (`profilednn_replay::trace_match`).
pub fn check_trace(trace: &Path, log: &Path, replay: &Replay, replay_path: &Path) -> Result<()> {
    let t = profilednn_torchreplay::step::trace_of_run(trace, Some(log))?;
    let steady = step_units::steady_iteration(&t).with_context(|| {
        format!(
            "{}: the trace marks no iteration (`profilednn.iteration#N` ranges), so it cannot be \
             matched with {}'s whole step",
            trace.display(),
            replay_path.display()
        )
    })?;
    profilednn_replay::trace_match::check(replay.framework.as_ref(), replay_path, trace, &steady)?;
    Ok(())
}

/// Projects `log` (read into `profile`) with `replay` and `machine`, as `project` does; a
/// replay of another log is handled as `mismatch` says, its warning printed here
/// (`profilednn_project::project::mismatch`).
pub fn projection(
    log: &Path,
    profile: &Profile,
    replay: Option<&Replay>,
    machine: Option<&profilednn_machine::MachineProfile>,
    mismatch: Mismatch,
) -> Result<Projection> {
    let (pr, warning) = mismatch::projection(log, profile, replay, machine, mismatch)?;
    if let Some(w) = warning {
        eprintln!("profilednn: WARNING: {w}");
    }
    Ok(pr)
}
