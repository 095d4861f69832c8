//! Replay results files (`profilednn replay -o R.json`, read by `profilednn_replay::file`)
//! projected onto their log: shared by `project`, and by `advise`/`report --replay`, so that
//! advice states the figures `project` prints for the same files.

use anyhow::Result;
use profilednn_analysis::Profile;
use profilednn_project::project::mismatch;
pub use profilednn_project::project::mismatch::Mismatch;
use profilednn_project::project::Projection;
use profilednn_replay::Replay;
use std::path::Path;

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
