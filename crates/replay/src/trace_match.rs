//! Whether a PyTorch trace is the one a whole-step replay was made from
//! (`project LOG --torch-trace TRACE --replay R.json`): the replay records the trace it read and
//! the steady iteration it replayed (index, wall time); a trace whose steady iteration differs
//! is another run's, and a projection from it would mix two runs.

use crate::framework::FrameworkReplay;
use profilednn_torchtrace::step_units::IterationRange;
use std::path::{Path, PathBuf};

/// The trace given is not the one the replay was made from (or the replay has no whole step).
#[derive(Debug, Clone, thiserror::Error)]
pub enum TraceMismatch {
    #[error(
        "{}: made without --torch-trace (no whole-step section): it cannot be checked against \
         {}; replay with `profilednn replay LOG --torch-trace {} -o {}`, or drop --torch-trace",
        replay.display(), trace.display(), trace.display(), replay.display()
    )]
    NoWholeStep { replay: PathBuf, trace: PathBuf },
    #[error(
        "{}: not the trace {} was replayed from ({recorded}): its steady iteration is #{index} \
         of {wall_ms:.3} ms, the replay's #{replayed_index} of {replayed_ms:.3} ms; pass the \
         replay's trace, or replay this one (`profilednn replay LOG --torch-trace {} -o R.json`)",
        trace.display(), replay.display(), trace.display()
    )]
    Other {
        trace: PathBuf,
        replay: PathBuf,
        recorded: String,
        index: u64,
        wall_ms: f64,
        replayed_index: u64,
        replayed_ms: f64,
    },
}

/// Checks that the trace at `trace`, whose steady iteration is `steady`, is the one `framework`
/// (of the replay file at `replay`) was made from: the same iteration, of the same wall time
/// (to the µs the trace records), wherever the file now lies.
pub fn check(
    framework: Option<&FrameworkReplay>,
    replay: &Path,
    trace: &Path,
    steady: &IterationRange,
) -> Result<(), TraceMismatch> {
    let Some(f) = framework else {
        return Err(TraceMismatch::NoWholeStep {
            replay: replay.into(),
            trace: trace.into(),
        });
    };
    if f.iteration == steady.index && (f.logged_step_ms - steady.wall_ms).abs() < 0.0015 {
        return Ok(());
    }
    Err(TraceMismatch::Other {
        trace: trace.into(),
        replay: replay.into(),
        recorded: f.trace.clone(),
        index: steady.index,
        wall_ms: steady.wall_ms,
        replayed_index: f.iteration,
        replayed_ms: f.logged_step_ms,
    })
}
