//! The projections the advice rules take: of the replay files given (`--replay`), and with
//! `--project` of the what-ifs the rules want, replayed here.

use anyhow::Result;
use profilednn_advice::{Evidence, Thresholds};
use profilednn_analysis::Profile;
use std::path::PathBuf;

/// The what-if projections the advice rules take, for `advise` and `report` alike: those of the
/// replay files (`--replay`), and with `project` (`--project`, its `--dnnl-lib`) the what-ifs
/// the rules want on `evidence`, replayed here through oneDNN.
pub(crate) fn projections(
    logs: &[PathBuf],
    profiles: &[Profile],
    evidence: &Evidence,
    thresholds: &Thresholds,
    replay_files: &[PathBuf],
    project: Option<Option<&std::path::Path>>,
    no_progress: bool,
) -> Result<Vec<profilednn_advice::Projected>> {
    let p = (replay_files, project, no_progress);
    projections_then_step(logs, profiles, evidence, thresholds, p, false)
}

/// [`projections`], for a caller that replays the whole step through PyTorch after them
/// (`whole_step`: `advise --project --torch-trace`), which `--project` then says.
pub(crate) fn projections_then_step(
    logs: &[PathBuf],
    profiles: &[Profile],
    evidence: &Evidence,
    thresholds: &Thresholds,
    (replay_files, project, no_progress): (&[PathBuf], Option<Option<&std::path::Path>>, bool),
    whole_step: bool,
) -> Result<Vec<profilednn_advice::Projected>> {
    let mut projections = crate::advice_projections::from_files(logs, profiles, replay_files)?;
    if let Some(dnnl_lib) = project {
        let wanted = profilednn_advice::wanted_what_ifs(evidence, thresholds);
        projections.extend(crate::whatif_run::project(
            logs,
            profiles,
            &wanted,
            dnnl_lib,
            no_progress,
            whole_step,
        )?);
    }
    Ok(projections)
}
