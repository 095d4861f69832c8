//! The projections the advice rules take: of the replay files given (`--replay`), and with
//! `--project` of the what-ifs the rules want, replayed here.

use anyhow::Result;
use profilednn_advice::{Evidence, Thresholds};
use profilednn_analysis::Profile;
use std::path::PathBuf;

/// The what-if projections the advice rules take, for `advise` and `report` alike: those of the
/// replay files (`--replay`, first and in order), and with `project` (`--project`, its
/// `--dnnl-lib`) the what-ifs the rules want on `evidence`, replayed here through oneDNN;
/// `whole_step`: the caller replays the whole step through PyTorch after them (`--project
/// --torch-trace`), which `--project` then says.
pub(crate) fn projections(
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

/// The whole-step what-ifs the advice takes: with `project` and a trace (`--project
/// --torch-trace`), bf16 replayed here through PyTorch against the step replayed as recorded;
/// then those of the replay files that hold the whole step (`projections`: the files' own,
/// first and in order, as [`projections`] returns them).
pub(crate) fn step_what_ifs(
    logs: &[PathBuf],
    merged: &Profile,
    torch_trace: Option<&std::path::Path>,
    project: bool,
    (replay_files, projections): (&[PathBuf], &[profilednn_advice::Projected]),
) -> Result<Vec<profilednn_advice::StepWhatIf>> {
    let mut steps = match (torch_trace, project) {
        (Some(t), true) => profilednn_project::project::step_what_if::what_ifs(
            t,
            logs.first().map(|l| l.as_path()),
            merged.metadata.threads.map(u64::from),
            merged.metadata.verbose_recording(),
        )?,
        _ => Vec::new(),
    };
    let files = &projections[..replay_files.len().min(projections.len())];
    steps.extend(crate::advice_projections::steps_from_files(
        replay_files,
        files,
    )?);
    Ok(steps)
}
