//! Replay results files (`profilednn replay -o R.json`) read back and projected onto their log:
//! shared by `project`, and by `advise`/`report --replay`, so that advice states the figures
//! `project` prints for the same files.

use anyhow::{bail, Context, Result};
use profilednn_analysis::Profile;
use profilednn_project::project::{project, Projection, ReplayMatch};
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
    let t = crate::torch_step::trace_of_run(trace, Some(log))?;
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

/// What to do with replay results that may be of another log.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// `project`: an error when no problem matches, a warning when few do.
    RefuseNone,
    /// `project --allow-mismatch`: a warning when few match.
    Allow,
    /// Advice: an error when few match (a projection mostly of another log's problems would
    /// state a gain that is not this log's).
    RefuseFew,
}

/// Projects `log` (read into `profile`) with `replay` and `machine`, as `project` does: logged
/// times are the medians of a second pass over the log (not for stdin). A replay of another
/// log is handled as `mismatch` says.
pub fn projection(
    log: &Path,
    profile: &Profile,
    replay: Option<&Replay>,
    machine: Option<&profilednn_machine::MachineProfile>,
    mismatch: Mismatch,
) -> Result<Projection> {
    let logged = if log.as_os_str() == "-" {
        None
    } else {
        let one_process = profilednn_analysis::ranks::logs::is_one_process(log);
        profilednn_verbose::LogInput::open(log)
            .ok()
            .map(|input| profilednn_replay::logged::logged_steady(input, one_process))
            // A launcher-labelled log reads as no events here: no medians, not empty ones.
            .filter(|l| !l.medians.is_empty())
    };
    let pr = project(profile, replay, machine, logged.as_ref());
    // A whole-step replay made without oneDNN holds no primitive to match: its framework ops
    // are the trace's, and the log's oneDNN figures are carried over.
    let framework_only = replay.is_some_and(|r| r.results.is_empty() && r.framework.is_some());
    if let (Some(m), false) = (&pr.replay_match, framework_only) {
        let what = format!(
            "{} of the log's {} problems ({:.1}% of its oneDNN time) have a result in the replay \
             ({} problems); log: {}; replay made from: {}",
            m.matched_problems,
            m.log_problems,
            m.matched_time_share * 100.0,
            m.replay_problems,
            pr.source,
            m.replay_source
        );
        let refuse = match mismatch {
            Mismatch::RefuseNone => m.matched_problems == 0,
            Mismatch::Allow => false,
            Mismatch::RefuseFew => m.matched_time_share < ReplayMatch::FEW,
        };
        if refuse {
            bail!(
                "the replay results are not of this log: {what}. Replay this log \
                 (`profilednn replay LOG`){}",
                if mismatch == Mismatch::RefuseNone {
                    ", or pass --allow-mismatch to project anyway"
                } else {
                    ""
                }
            );
        }
        if m.matched_time_share < ReplayMatch::FEW {
            eprintln!(
                "profilednn: WARNING: the replay results may be of another log: {what}; \
                 the rest is {}",
                if machine.is_some() {
                    "projected with the machine profile's roofline"
                } else {
                    "carried over unchanged"
                }
            );
        }
    }
    Ok(pr)
}
