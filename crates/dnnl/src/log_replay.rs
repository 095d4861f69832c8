//! The sequence replay of a log, end to end, as `replay` runs it: open the log again for its
//! steady-state iteration, keep the problems asked for, choose the per-call heap the log shows,
//! decide whether the replay is another run of the training, then replay the iteration as
//! logged or rewritten. One place, so that every command replays a log the same way.

use crate::replayer::{Replayed, Replayer};
use crate::sequence::SequenceTiming;
use crate::ReplayError;
use profilednn_analysis::Profile;
use profilednn_whatif::{TransformError, WhatIf};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What to replay of a log, and how.
pub struct LogReplay<'a> {
    pub log: &'a Path,
    /// The log's profile (its iteration count, thread count and problems).
    pub profile: &'a Profile,
    /// Only these problems (`replay --top`); `None`: every call of the iteration.
    pub keep: Option<HashSet<String>>,
    pub timing: SequenceTiming,
    pub what_if: Option<&'a WhatIf>,
    /// The replay's thread count when given (`None`: the runtime's).
    pub threads: Option<u64>,
    /// Whether the replay projects another run of the training (`replay --run`); `None`:
    /// decided from the rewrite and the thread counts (see
    /// [`crate::heap_choice::is_another_run`]).
    pub another_run: Option<bool>,
    /// A rewrite that cannot be made replays the iteration as logged instead of failing (the
    /// whole step's framework ops take the what-if, `replay --torch-trace`).
    pub as_logged_if_unwritable: bool,
}

/// Why a log's replay stopped.
#[derive(Debug, thiserror::Error)]
pub enum LogReplayError {
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("{}", log.display())]
    Rewrite {
        log: PathBuf,
        #[source]
        source: TransformError,
    },
}

/// The replay, and the rewrite that could not be made when it fell back to the iteration as
/// logged (for the command to say so).
pub struct LogReplayed {
    pub replayed: Replayed,
    pub unwritable: Option<TransformError>,
}

impl Replayer<'_> {
    /// Replays the steady-state iteration of `r.log` (see [`LogReplay`]).
    pub fn log(&self, r: &LogReplay) -> Result<LogReplayed, LogReplayError> {
        let mut steady = self.steady(r.log, r.profile)?;
        if let Some(keep) = &r.keep {
            steady
                .calls
                .retain(|p| keep.contains(&profilednn_benchdnn::problem_key(p)));
        }
        let log_threads = r.profile.metadata.threads.map(u64::from);
        let mut heap = self.heap(r.log, &steady, log_threads, &r.timing);
        // A rewrite, or another thread count (given, or the runtime's default), projects
        // another run of the training: its gradients' copies do not inherit this run's heap
        // accident.
        let another = r
            .another_run
            .unwrap_or_else(|| self.is_another_run(&steady, r.what_if, r.threads, log_threads));
        if another {
            heap = heap.another_run(&steady).0;
        }
        let as_logged = |unwritable| LogReplayed {
            replayed: self.as_logged(&steady, &heap, r.profile),
            unwritable,
        };
        let Some(w) = r.what_if else {
            return Ok(as_logged(None));
        };
        match self.what_if(&steady, w, &heap) {
            Ok(replayed) => Ok(LogReplayed {
                replayed,
                unwritable: None,
            }),
            Err(e) if r.as_logged_if_unwritable => Ok(as_logged(Some(e))),
            Err(source) => Err(LogReplayError::Rewrite {
                log: r.log.to_path_buf(),
                source,
            }),
        }
    }
}
