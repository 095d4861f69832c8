//! Where machine profiles live: `--machine FILE`, else the one `profilednn peak` saved.

use anyhow::Result;
use profilednn_machine::MachineProfile;
use std::path::{Path, PathBuf};

/// `$PROFILEDNN_MACHINE`, else `$XDG_CONFIG_HOME/profilednn/machine.json`
/// (`~/.config/profilednn/machine.json`).
pub fn default_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROFILEDNN_MACHINE") {
        return Some(PathBuf::from(p));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("profilednn").join("machine.json"))
}

/// The explicit profile (an error if unreadable), else the default one when it exists.
pub fn load(explicit: Option<&Path>) -> Result<Option<MachineProfile>> {
    if let Some(p) = explicit {
        return Ok(Some(MachineProfile::load(p)?));
    }
    match default_path() {
        Some(p) if p.exists() => Ok(Some(MachineProfile::load(&p)?)),
        _ => Ok(None),
    }
}
