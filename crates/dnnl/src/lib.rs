//! Native replay: each unique primitive of a log re-created and timed through oneDNN's C API,
//! loaded at run time (`dlopen`). This is the only crate of the replay side with unsafe code.
//! Problems are identified by their benchdnn line (`profilednn-benchdnn`).
//!
//! A command replays through one [`Replayer`] (open the log, cut its steady iteration, choose
//! the heap, replay, record); progress and Ctrl-C come in through a [`Progress`] it is given,
//! and the environment is read in one module (`env`).

pub mod what_if_run;

pub mod allocation;
pub mod api;
pub mod build;

mod env;
mod error;
mod fresh;
pub mod heap_choice;
mod isolated;
mod log_replay;
mod progress;
mod replayer;
mod session;

mod rank;
pub mod run;
pub mod sequence;
pub mod status;
mod threads;
mod weights_layout;

pub use error::ReplayError;
pub use isolated::replay_profile;
pub use log_replay::{LogReplay, LogReplayError, LogReplayed};
pub use progress::{Prefixed, Progress, Quiet};
pub use rank::RankReplay;
pub use replayer::{HeapPlan, Replayed, Replayer, Steady};
pub use session::Session;

#[cfg(test)]
pub(crate) use session::session_or_skip;
