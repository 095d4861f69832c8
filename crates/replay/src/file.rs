//! A `profilednn replay` results file read back (`project`, `advise`/`report --replay`); a
//! file of another kind (a log, a trace) is refused naming what it is and what makes a replay
//! file.

use crate::{Replay, ReplayFileError};
use profilednn_verbose::FileKind;
use std::path::{Path, PathBuf};

/// Why a replay results file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file of another kind: what it is, and the command that writes replay results.
    #[error("{0}")]
    OtherKind(String),
    #[error("{}: cannot read", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        error: ReplayFileError,
    },
}

/// The replay results at `path`.
pub fn load(path: &Path) -> Result<Replay, LoadError> {
    let refusal = FileKind::of_file(path)
        .ok()
        .and_then(|k| k.refusal(path, FileKind::ReplayResults));
    if let Some(m) = refusal {
        return Err(LoadError::OtherKind(m));
    }
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::Read {
        path: path.into(),
        error,
    })?;
    Replay::from_json(&text).map_err(|error| LoadError::Parse {
        path: path.into(),
        error,
    })
}
