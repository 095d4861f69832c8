//! Where machine profiles live: `--machine FILE`, else the one `profilednn peak` saved; and
//! reading one, files of another kind refused with what they are.

use profilednn_machine::{MachineProfile, ProfileError};
use profilednn_verbose::FileKind;
use std::path::{Path, PathBuf};

/// Why a machine profile could not be read; each says what the file is or what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum MachineFileError {
    #[error("cannot read machine profile {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// A file of another kind (a log, a trace, replay results).
    #[error("{0}")]
    OtherKind(String),
    #[error("{}: this is binary data, not text: expected {}", path.display(), wanted.expected())]
    Binary { path: PathBuf, wanted: FileKind },
    #[error(transparent)]
    Profile(#[from] ProfileError),
}

/// `$PROFILEDNN_MACHINE`, else `$XDG_CONFIG_HOME/profilednn/machine.json`
/// (`~/.config/profilednn/machine.json`).
pub fn default_path() -> Option<PathBuf> {
    use std::env::var_os;
    path_from(
        var_os("PROFILEDNN_MACHINE"),
        var_os("XDG_CONFIG_HOME"),
        var_os("HOME"),
    )
}

/// [`default_path`] from the variables' values. An empty or relative `XDG_CONFIG_HOME` is
/// ignored, as the XDG spec says: `XDG_CONFIG_HOME=` once sent `peak` to write a relative
/// `profilednn/machine.json` in whatever directory it ran in.
fn path_from(
    machine: Option<std::ffi::OsString>,
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    if let Some(p) = machine {
        return Some(PathBuf::from(p));
    }
    let base = xdg
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| home.map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("profilednn").join("machine.json"))
}

/// The explicit profile (an error if unreadable), else the default one when it exists.
pub fn load(explicit: Option<&Path>) -> Result<Option<MachineProfile>, MachineFileError> {
    if let Some(p) = explicit {
        return Ok(Some(read(p)?));
    }
    match default_path() {
        Some(p) if p.exists() => Ok(Some(read(&p)?)),
        _ => Ok(None),
    }
}

/// The machine profile at `path` (gzip-compressed or not). A file of another kind (a log, a
/// PyTorch trace, replay results, binary data) is refused naming what it is, what was expected
/// and the command that writes a profile: given as `--machine`, a `.json.gz` trace once failed
/// with the JSON reader's "stream did not contain valid UTF-8". The check is here, not in
/// `MachineProfile::load`, since the machine crate sits below the one that knows file kinds.
pub fn read(path: &Path) -> Result<MachineProfile, MachineFileError> {
    Ok(MachineProfile::from_json(
        &read_text(path)?,
        &path.display().to_string(),
    )?)
}

/// The text of a machine profile file (gzip-compressed or not), files of another kind refused
/// with what they are: for `--machine` and for `project --to`/`--from`, which validate it
/// their own way.
pub fn read_text(path: &Path) -> Result<String, MachineFileError> {
    use std::io::Read;
    let wanted = FileKind::MachineProfile;
    let unreadable = |error| MachineFileError::Read {
        path: path.into(),
        error,
    };
    let kind = FileKind::of_file(path).ok();
    if let Some(m) = kind.and_then(|k| k.refusal(path, wanted)) {
        return Err(MachineFileError::OtherKind(m));
    }
    let mut bytes = Vec::new();
    profilednn_verbose::gzip::decompressed(std::fs::File::open(path).map_err(unreadable)?)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    String::from_utf8(bytes).map_err(|_| MachineFileError::Binary {
        path: path.into(),
        wanted,
    })
}

#[cfg(test)]
mod tests {
    use super::path_from;
    use std::path::PathBuf;

    #[test]
    fn an_empty_or_relative_xdg_config_home_falls_back_to_home() {
        let home = Some("/home/u".into());
        let want = Some(PathBuf::from("/home/u/.config/profilednn/machine.json"));
        assert_eq!(path_from(None, Some("".into()), home.clone()), want);
        assert_eq!(path_from(None, Some("rel".into()), home.clone()), want);
        assert_eq!(
            path_from(None, Some("/x".into()), home.clone()),
            Some(PathBuf::from("/x/profilednn/machine.json"))
        );
        assert_eq!(path_from(None, None, None), None);
        assert_eq!(
            path_from(Some("m.json".into()), None, home),
            Some(PathBuf::from("m.json"))
        );
    }
}
