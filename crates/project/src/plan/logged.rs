//! What `plan` reads from a training log: the steady-state iteration it replays, every logged
//! rank's mini-batch and thread count, and each rank's time outside oneDNN per iteration (from
//! timestamps) — the same reading for the planned log, for `--allreduce-log` and for each node's
//! `--network-log`.

use super::Outside;
use profilednn_analysis::load::{self, LoadError, LoadOptions, Unwatched};
use profilednn_analysis::ranks::events::for_each_rank_event;
use profilednn_analysis::ranks::logs::{self as rank_logs, RankLogError, Source};
use profilednn_analysis::ranks::{iteration_times, IterationTimes, RankSet};
use profilednn_analysis::steady_calls::{iteration_count, steady_iteration, Steady, SteadyCalls};
use profilednn_analysis::Profile;
use profilednn_verbose::{LogInput, OpenError};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One training log as the plan sees it.
pub struct Logged {
    /// The first rank's steady-state iteration (every rank runs the same model).
    pub steady: Steady,
    /// Each logged rank's mini-batch, in rank order (a straggler's larger batch counts).
    pub rank_batches: Vec<u64>,
    /// The first rank's thread count (header `nthr:`), when logged.
    pub threads: Option<u64>,
    /// oneDNN's verbose mode as the run was recorded with (`RunMetadata::verbose_recording`):
    /// the whole-step replay turns it on alike.
    pub verbose: Option<bool>,
    /// Per rank, per iteration: time outside oneDNN (ms), from timestamps.
    pub outside_per_rank: Vec<Vec<Option<f64>>>,
    /// Per rank, per iteration: oneDNN time (ms) of the iterations whose wall time is known.
    pub onednn_per_rank: Vec<Vec<Option<f64>>>,
}

/// Why a log could not be read for the plan; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum LoggedError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Ranks(#[from] RankLogError),
    #[error("{}: cannot read the log", path.display())]
    Open {
        path: PathBuf,
        #[source]
        error: OpenError,
    },
    #[error("{}: cannot read the log", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{log}: a multi-rank log without a rank's lines")]
    NoRank { log: String },
    #[error("{log}: the log holds {ranks} ranks (labelled by {launcher}); drop --log-ranks")]
    LogRanks {
        log: String,
        ranks: u64,
        launcher: String,
    },
    #[error("--log-ranks {0}: give a count of ranks from 1 on")]
    TooManyRanks(u64),
    #[error(
        "{log}: no convolution, inner product or matmul with an `mb` in the steady-state \
         iteration ({from}): the mini-batch, and so the global batch, is unknown"
    )]
    NoBatch { log: String, from: String },
}

type Result<T> = std::result::Result<T, LoggedError>;

impl Logged {
    /// The ranks of several nodes' logs as one run: every rank's times and mini-batch, the
    /// first node's iteration and thread count; none without a node.
    pub fn of_nodes(nodes: Vec<Logged>) -> Option<Logged> {
        let mut nodes = nodes.into_iter();
        let mut first = nodes.next()?;
        for n in nodes {
            first.rank_batches.extend(n.rank_batches);
            first.outside_per_rank.extend(n.outside_per_rank);
            first.onednn_per_rank.extend(n.onednn_per_rank);
        }
        Some(first)
    }

    /// The ranks' steady time outside oneDNN, at the first rank's batch and `threads` (or
    /// `default_threads` when the header does not say); none without timestamps.
    pub fn outside(&self, default_threads: u64) -> Option<Outside> {
        let (logged_ms, steady_iterations) =
            profilednn_replay::logged::steady_median(&self.outside_per_rank)?;
        Some(Outside {
            logged_ms,
            logged_onednn_ms: profilednn_replay::logged::steady_median(&self.onednn_per_rank)
                .map(|m| m.0),
            steady_iterations,
            logged_threads: self.threads.unwrap_or(default_threads),
            logged_batch: *self.rank_batches.first()?,
            logged_allreduce_ms: 0.0,
        })
    }
}

/// Options of a plan's reading: every log read whole, without a progress bar; with `empty_ok`
/// a log without a oneDNN line is a profile of nothing.
fn options(empty_ok: bool) -> LoadOptions<'static> {
    LoadOptions {
        threads: None,
        iterations: None,
        empty_ok,
        progress: &Unwatched,
    }
}

/// The whole (decompressed) log.
fn read_all(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    match open(path)? {
        LogInput::Mapped { map, .. } => bytes.extend_from_slice(&map),
        LogInput::Empty { .. } => {}
        LogInput::Stream { mut reader, .. } => {
            reader
                .read_to_end(&mut bytes)
                .map_err(|error| LoggedError::Read {
                    path: path.into(),
                    error,
                })?;
        }
    }
    Ok(bytes)
}

fn stream(path: &Path, bytes: Vec<u8>) -> LogInput {
    LogInput::Stream {
        path: path.into(),
        reader: Box::new(std::io::Cursor::new(bytes)),
        compressed_len: None,
    }
}

fn open(path: &Path) -> Result<LogInput> {
    LogInput::open(path).map_err(|error| LoggedError::Open {
        path: path.into(),
        error,
    })
}

/// Per iteration: (time outside oneDNN, oneDNN time), both where the wall time is known.
fn times_of(per_iteration: &[IterationTimes]) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    per_iteration
        .iter()
        .map(|i| (i.outside_ms, i.wall_ms.map(|_| i.onednn_ms)))
        .unzip()
}

/// A single-process log: its steady-state iteration, its mini-batch `log_ranks` times (one
/// rank's log cut out of a run). A multi-rank log (launcher labels or a torchrun `--log-dir`
/// tree): the first rank's iteration and each rank's own mini-batch. A multi-rank log is read
/// as it streams, twice (its profiles, then its steady iterations); a single-process one is
/// read whole into memory once its profile is made (stdin can be read only once).
///
/// `batch`: the mini-batch to plan with instead of the one the primitives' `mb` give (`plan
/// --torch-trace` reads it from the trace's tensors, as the whole-step replay scales it); with
/// it, a log without a oneDNN line plans too (the step is the trace's).
pub fn read(path: &Path, log_ranks: Option<u64>, batch: Option<u64>) -> Result<Logged> {
    let source = if path.as_os_str() == "-" {
        None
    } else {
        Some(rank_logs::split_or_open(path)?)
    };
    let (source, launcher, files) = match source {
        None | Some(Source::Single(_)) => return read_single(path, log_ranks, batch),
        Some(Source::Labelled {
            source, launcher, ..
        }) => (source, launcher.as_str().to_string(), None),
        Some(Source::Files(f)) => (f.source, f.launcher, Some(f.files)),
    };
    let loaded = load::logs_and_ranks(&[path.to_path_buf()], &options(false))?;
    let Some(set) = loaded.ranks.first() else {
        return Err(LoggedError::NoRank { log: source });
    };
    let n = set.ranks.len() as u64;
    if log_ranks.is_some_and(|k| k != n) {
        return Err(LoggedError::LogRanks {
            log: source,
            ranks: n,
            launcher,
        });
    }
    // The loader keeps the ranks' profiles in rank order, as their views.
    let profiles = &loaded.profiles[..set.ranks.len()];
    let steady: Vec<Steady> = match files {
        Some(files) => files
            .iter()
            .zip(profiles)
            .map(|((_, file), p)| Ok(steady_iteration(open(file)?, p)))
            .collect::<Result<_>>()?,
        None => steady_of_labelled(path, set, profiles)?,
    };
    let mut first = None;
    let mut rank_batches = Vec::new();
    let mut outside_per_rank = Vec::new();
    let mut onednn_per_rank = Vec::new();
    for ((view, profile), Steady { calls, from }) in set.ranks.iter().zip(profiles).zip(steady) {
        let (outside, onednn) = times_of(&view.per_iteration);
        outside_per_rank.push(outside);
        onednn_per_rank.push(onednn);
        let name = format!("{source} [rank {}]", view.rank);
        rank_batches.push(match batch {
            Some(b) => b,
            None => batch_of(&calls, &from, &name)?,
        });
        if first.is_none() {
            let threads = profile.metadata.threads.map(u64::from);
            let verbose = profile.metadata.verbose_recording();
            first = Some((
                calls,
                format!("rank {}: {from}", view.rank),
                threads,
                verbose,
            ));
        }
    }
    let Some((calls, from, threads, verbose)) = first else {
        return Err(LoggedError::NoRank { log: source });
    };
    Ok(Logged {
        steady: Steady { calls, from },
        rank_batches,
        threads,
        verbose,
        outside_per_rank,
        onednn_per_rank,
    })
}

/// Each rank's steady iteration (in the order of `set`'s ranks), from one pass over a
/// labelled log.
fn steady_of_labelled(path: &Path, set: &RankSet, profiles: &[Profile]) -> Result<Vec<Steady>> {
    let Source::Labelled {
        launcher, input, ..
    } = rank_logs::split_or_open(path)?
    else {
        return Err(LoggedError::NoRank {
            log: path.display().to_string(),
        });
    };
    let mut by_rank: HashMap<u32, SteadyCalls> = HashMap::new();
    // A truncated gzip ends the ranks' lines where it ends, as it ended their profiles.
    let _ = for_each_rank_event(input, launcher, |r, e| {
        by_rank.entry(r).or_default().event(e)
    });
    Ok(set
        .ranks
        .iter()
        .zip(profiles)
        .map(|(v, p)| {
            let steady = by_rank.remove(&v.rank).unwrap_or_default();
            let (calls, from) = steady.finish(iteration_count(p));
            Steady { calls, from }
        })
        .collect())
}

/// A single-process log (or stdin).
fn read_single(path: &Path, log_ranks: Option<u64>, batch: Option<u64>) -> Result<Logged> {
    // With the trace's batch (`plan --torch-trace`), a log without a oneDNN line (an f32
    // transformer, a compiled model) still plans: the step is the trace's.
    let profile = load::profile(path, &options(batch.is_some()))?;
    let bytes = read_all(path)?;
    let (outside, onednn) = times_of(&iteration_times(&bytes));
    let Steady { calls, from } = steady_iteration(stream(path, bytes), &profile);
    let mb = match batch {
        Some(b) => b,
        None => batch_of(&calls, &from, &path.display().to_string())?,
    };
    let k = log_ranks.unwrap_or(1);
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k > 0)
        .ok_or(LoggedError::TooManyRanks(k))?;
    Ok(Logged {
        steady: Steady { calls, from },
        rank_batches: vec![mb; k],
        threads: profile.metadata.threads.map(u64::from),
        verbose: profile.metadata.verbose_recording(),
        outside_per_rank: vec![outside],
        onednn_per_rank: vec![onednn],
    })
}

fn batch_of(calls: &super::Iteration, from: &str, source: &str) -> Result<u64> {
    super::logged_batch(calls).ok_or_else(|| LoggedError::NoBatch {
        log: source.to_string(),
        from: from.to_string(),
    })
}
