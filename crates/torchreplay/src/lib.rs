//! The whole training step replayed through PyTorch: the units of one steady iteration of a
//! torch.profiler trace ([`profilednn_torchtrace::step_units`]) sent to a helper
//! (`python/profilednn/replay_ops.py`, built into this crate) run with an interpreter that has
//! torch, and its timings gathered into the replay file's `framework` section
//! ([`profilednn_replay::framework`]).
//!
//! Why a helper process and not oneDNN: most of a transformer's step (f32 GEMMs in the BLAS,
//! attention and element-wise ops in ATen, the optimizer's loop) has no oneDNN primitive, and
//! the what-ifs change where PyTorch runs an op (a bf16 linear becomes a oneDNN matmul): only
//! PyTorch answers that. The binary links no Python; the user's own interpreter runs the ops,
//! as `record` runs their program.

mod error;
mod python;
mod run;
pub mod step;

pub use error::TorchReplayError;
pub use python::{interpreter, interpreter_of, recorded, Interpreter};
pub use run::{replay, Options};
