//! The replay results format, `profilednn.replay.v2`: what `profilednn replay` writes (the
//! replay itself runs in `profilednn-dnnl`) and `project`, `advise --replay` and `plan` read.
//! Problems are identified by their benchdnn line (`profilednn-benchdnn`); the steady-state
//! statistics of a log and of a replay are here too (`logged`, `stability`), so that a log and
//! its replay are read alike.

pub mod allocation;
pub mod file;
pub mod framework;
pub mod logged;
pub mod results;
pub mod sequence;
pub mod skip;
pub mod stability;
pub mod trace_match;

pub use results::{
    keep_heaviest, problem_keys, problems, Measurement, Mode, Problem, Replay, ReplayFileError,
    ReplayResult, SCHEMA, SCHEMA_V1,
};
pub use skip::{SkipReason, Status};
