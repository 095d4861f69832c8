//! The plan of one log before any replay: the log (and its trace) read, the footprint of its
//! steady iteration, the machine and its all-reduce rates, the splits with their validity.
//! `plan` then replays the valid splits (oneDNN, or the whole step through PyTorch).

use super::footprint::{self, FootprintError};
use super::logged::{self, Logged, LoggedError};
use super::measured::{self, Given, MeasuredError};
use super::torch_step::{self, Step, StepReadError};
use super::{skeleton, Plan};
use std::path::{Path, PathBuf};

/// What the plan is made of, as the flags give it.
pub struct Request<'a> {
    pub log: &'a Path,
    /// `--log-ranks`: the ranks of a log cut out of a multi-rank run.
    pub log_ranks: Option<u64>,
    /// `--torch-trace`: plan the whole step from the trace recorded with the log.
    pub torch_trace: Option<&'a Path>,
    pub given: Given<'a>,
}

/// The plan with what it was made from, which its replays need.
pub struct Planned {
    pub plan: Plan,
    pub logged: Logged,
    pub step: Option<Step>,
}

/// Why no plan could be made; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Step(#[from] StepReadError),
    #[error(transparent)]
    Logged(#[from] LoggedError),
    #[error(
        "--torch-trace plans from one process's run: {} holds {ranks} ranks, whose trace times \
         hold their all-reduce; record the training as a single process (`profilednn record \
         --torch`)",
        log.display()
    )]
    SeveralRanks { log: PathBuf, ranks: usize },
    #[error("{}: steady-state iteration ({from})", log.display())]
    Footprint {
        log: PathBuf,
        from: String,
        #[source]
        error: Box<FootprintError>,
    },
    #[error(transparent)]
    Measured(#[from] MeasuredError),
    #[error("{0}")]
    Splits(String),
}

/// The plan of `req` before any replay; its `warnings` are for the caller to print.
pub fn plan(req: &Request<'_>) -> Result<Planned, BuildError> {
    let log = req.log;
    let step = req
        .torch_trace
        .map(|t| torch_step::read(t, log))
        .transpose()?;
    let logged = logged::read(log, req.log_ranks, step.as_ref().map(|s| s.batch))?;
    if step.is_some() && logged.rank_batches.len() > 1 {
        return Err(BuildError::SeveralRanks {
            log: log.into(),
            ranks: logged.rank_batches.len(),
        });
    }
    let mut footprint =
        footprint::of_iteration(&logged.steady.calls).map_err(|error| BuildError::Footprint {
            log: log.into(),
            from: logged.steady.from.clone(),
            error: Box::new(error),
        })?;
    if let Some(s) = &step {
        footprint.gradient_bytes = s.gradients.bytes;
    }
    // A log without a thread count in its header ran on the planned cores (of one node), ranks
    // sharing them.
    let default_threads = (req.given.cores / logged.rank_batches.len() as u64).max(1);
    let outside = logged.outside(default_threads);
    let this_log = (log, &logged, outside.as_ref());
    let target = measured::target(&req.given, this_log, footprint.gradient_bytes)?;
    let mut plan = skeleton(
        &log.display().to_string(),
        &target,
        &logged.rank_batches,
        footprint,
        if step.is_some() { None } else { outside },
    )
    .map_err(BuildError::Splits)?;
    if let Some(s) = &step {
        plan.as_whole_step(torch_step::whole_step(s));
    }
    plan.assumptions.insert(
        0,
        format!(
            "the iteration: {}, {} calls",
            logged.steady.from,
            logged.steady.calls.len()
        ),
    );
    Ok(Planned { plan, logged, step })
}
