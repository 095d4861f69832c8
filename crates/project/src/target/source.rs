//! The machine profiles of `project --to`: each target's file, and the source machine the log
//! ran on (`--from`, else this machine's saved profile when the log ran on its units).

use super::profile_file::{parse, TargetProfile, TargetProfileError};
use crate::machine_file::{self, MachineFileError};
use profilednn_analysis::Profile;
use profilednn_machine::MachineProfile;
use std::path::Path;

/// Why a target or source profile could not be had; each says what to pass instead.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    File(#[from] MachineFileError),
    #[error(transparent)]
    Profile(#[from] TargetProfileError),
    #[error(
        "the log ran on other units ({isa}) than this machine's ({here}): pass --from \
         SOURCE.json, the profile of the machine it ran on (machines/*/profile.json, or \
         `profilednn peak -o SOURCE.json` there)"
    )]
    OtherUnits { isa: String, here: String },
    #[error(
        "whether the log ran on this machine is unknown (its ISA line: {0}): pass --from \
         SOURCE.json, the profile of the machine it ran on"
    )]
    UnknownUnits(String),
    #[error(
        "the log ran on this machine, which has no saved profile: run `profilednn peak` \
         (a few seconds), or pass --from SOURCE.json"
    )]
    NoSavedProfile,
}

/// The target profile at `path`.
pub fn read_target(path: &Path) -> Result<TargetProfile, SourceError> {
    Ok(parse(
        &machine_file::read_text(path)?,
        &path.display().to_string(),
    )?)
}

/// `--from`, else the default machine profile when the log ran on this machine's units; with
/// how the output names it.
pub fn source_of(
    from: Option<&Path>,
    profile: &Profile,
) -> Result<(MachineProfile, String), SourceError> {
    if let Some(p) = from {
        return Ok((read_target(p)?.profile, p.display().to_string()));
    }
    let here: Vec<String> = profilednn_machine::cpu::isas()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let isa = profile.metadata.isa.join("; ");
    match profilednn_analysis::log_machine::same_units(&profile.metadata, &here) {
        Some(true) => {}
        Some(false) => {
            return Err(SourceError::OtherUnits {
                isa,
                here: here.join(", "),
            })
        }
        None => {
            return Err(SourceError::UnknownUnits(if isa.is_empty() {
                "none".into()
            } else {
                isa
            }))
        }
    }
    let Some(path) = machine_file::default_path().filter(|p| p.exists()) else {
        return Err(SourceError::NoSavedProfile);
    };
    let m = read_target(&path)?.profile;
    Ok((
        m,
        format!("the default machine profile ({})", path.display()),
    ))
}
