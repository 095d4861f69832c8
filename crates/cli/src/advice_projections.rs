//! `advise --replay` and `--project`: the one log a what-if projection is of, and each replay
//! file's projection, turned into the advice's figures by `profilednn_project::advice`.

use anyhow::Result;
use profilednn_advice::{Projected, StepWhatIf};
use profilednn_analysis::Profile;
use profilednn_replay::Replay;
use std::path::{Path, PathBuf};

/// The projection of `log` with each replay file, in order.
pub fn from_files(
    logs: &[PathBuf],
    profiles: &[Profile],
    files: &[PathBuf],
) -> Result<Vec<Projected>> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let (log, profile) = profilednn_project::advice::one_log(logs, profiles, "--replay")?;
    files
        .iter()
        .map(|f| {
            let replay = profilednn_replay::file::load(f)?;
            of(log, profile, &replay, &f.display().to_string())
        })
        .collect()
}

/// The whole-step what-ifs of the replay files that replayed the whole step (`replay
/// --torch-trace`), named as their projections (`projections`, one per file in order), set
/// against their baselines by `step_what_if::of_replays`. A file without the whole step gives
/// none.
pub fn steps_from_files(files: &[PathBuf], projections: &[Projected]) -> Result<Vec<StepWhatIf>> {
    use profilednn_project::project::step::StepProjection;
    let mut steps = Vec::new();
    for (f, p) in files.iter().zip(projections) {
        if let Some(fw) = profilednn_replay::file::load(f)?.framework {
            steps.push((p, StepProjection::of(&fw)));
        }
    }
    Ok(profilednn_project::project::step_what_if::of_replays(
        &steps,
    ))
}

/// The projection of `log` with `replay` (named `name` in the advice), as `project` computes it.
pub fn of(log: &Path, profile: &Profile, replay: &Replay, name: &str) -> Result<Projected> {
    let pr = crate::replay_file::projection(
        log,
        profile,
        Some(replay),
        None,
        crate::replay_file::Mismatch::RefuseFew,
    )?;
    Ok(profilednn_project::advice::projected(
        &pr, profile, replay, name,
    ))
}
