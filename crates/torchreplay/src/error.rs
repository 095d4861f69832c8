//! Why the PyTorch replay could not run; each message says what to do next.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum TorchReplayError {
    #[error(
        "cannot start {}: {error}. The framework ops replay through PyTorch: give --python PATH \
         (the interpreter that recorded the run, with torch), or set PROFILEDNN_TORCH_PYTHON",
        python.display()
    )]
    Spawn {
        python: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{} has no torch (`import torch` failed): give --python PATH of the interpreter that \
         recorded the run, or set PROFILEDNN_TORCH_PYTHON",
        python.display()
    )]
    NoTorch { python: PathBuf },
    #[error("the PyTorch replay helper ({}) failed ({status}): {stderr}", python.display())]
    Failed {
        python: PathBuf,
        status: String,
        stderr: String,
    },
    #[error("the PyTorch replay helper's output is not what this version expects ({0}): run the helper of the same ProfileDNN")]
    Output(String),
    #[error("the framework ops cannot be replayed so: {0}")]
    Refused(String),
    #[error("the trace's steady iteration holds no ATen op to replay")]
    NoUnits,
}
