//! Which Python runs the helper: the one environment variable this crate reads.

use std::path::{Path, PathBuf};

/// The interpreter, and where the choice came from (said in the output, since a wrong one is
/// the likeliest cause of a surprising figure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    pub path: PathBuf,
    pub from: &'static str,
}

/// `given` (`--python`), else `$PROFILEDNN_TORCH_PYTHON`, else the running interpreter when
/// the command runs inside one (the `profilednn` console script of `pip install ./python`,
/// whose Python has torch; `$PROFILEDNN_RUNNING_PYTHON`), else `python3` from the PATH.
pub fn interpreter(given: Option<&Path>) -> Interpreter {
    if let Some(p) = given {
        return Interpreter {
            path: p.into(),
            from: "--python",
        };
    }
    if let Some(p) = std::env::var_os("PROFILEDNN_TORCH_PYTHON").filter(|p| !p.is_empty()) {
        return Interpreter {
            path: p.into(),
            from: "PROFILEDNN_TORCH_PYTHON",
        };
    }
    // Set by the console script (`python/profilednn/_cli.py`) to its `sys.executable`: the
    // venv's interpreter, where the process's own executable would be the base one.
    if let Some(p) = std::env::var_os("PROFILEDNN_RUNNING_PYTHON").filter(|p| !p.is_empty()) {
        return Interpreter {
            path: p.into(),
            from: "the running interpreter",
        };
    }
    Interpreter {
        path: "python3".into(),
        from: "the PATH",
    }
}
