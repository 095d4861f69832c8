//! What `plan` reads from a training log: the steady-state iteration it replays, every logged
//! rank's mini-batch and thread count, and each rank's time outside oneDNN per iteration (from
//! timestamps) — the same reading for the planned log and for `--allreduce-log`.

use anyhow::{bail, Context, Result};
use profilednn_analysis::rank_events::for_each_rank_event;
use profilednn_analysis::rank_logs::{self, Source};
use profilednn_analysis::ranks::{iteration_times, IterationTimes, RankSet};
use profilednn_analysis::steady_calls::{iteration_count, SteadyCalls};
use profilednn_analysis::Profile;
use profilednn_dnnl::sequence::steady_iteration;
use profilednn_dnnl::Steady;
use profilednn_project::plan::{self, Outside};
use profilednn_verbose::LogInput;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// One training log as the plan sees it.
pub struct Logged {
    /// The first rank's steady-state iteration (every rank runs the same model).
    pub steady: Steady,
    /// Each logged rank's mini-batch, in rank order (a straggler's larger batch counts).
    pub rank_batches: Vec<u64>,
    /// The first rank's thread count (header `nthr:`), when logged.
    pub threads: Option<u64>,
    /// Per rank, per iteration: time outside oneDNN (ms), from timestamps.
    pub outside_per_rank: Vec<Vec<Option<f64>>>,
    /// Per rank, per iteration: oneDNN time (ms) of the iterations whose wall time is known.
    pub onednn_per_rank: Vec<Vec<Option<f64>>>,
}

impl Logged {
    /// The ranks of several nodes' logs as one run: every rank's times and mini-batch, the
    /// first node's iteration and thread count.
    pub fn of_nodes(mut nodes: Vec<Logged>) -> Logged {
        let mut first = nodes.remove(0);
        for n in nodes {
            first.rank_batches.extend(n.rank_batches);
            first.outside_per_rank.extend(n.outside_per_rank);
            first.onednn_per_rank.extend(n.onednn_per_rank);
        }
        first
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

/// The whole (decompressed) log.
fn read_all(path: &Path) -> Result<Vec<u8>> {
    let cannot = || format!("{}: cannot read the log", path.display());
    let mut bytes = Vec::new();
    match LogInput::open(path).with_context(cannot)? {
        LogInput::Mapped { map, .. } => bytes.extend_from_slice(&map),
        LogInput::Empty { .. } => {}
        LogInput::Stream { mut reader, .. } => {
            reader.read_to_end(&mut bytes).with_context(cannot)?;
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

/// Per iteration: (time outside oneDNN, oneDNN time), both where the wall time is known.
fn times_of(per_iteration: &[IterationTimes]) -> (Vec<Option<f64>>, Vec<Option<f64>>) {
    per_iteration
        .iter()
        .map(|i| (i.outside_ms, i.wall_ms.map(|_| i.onednn_ms)))
        .unzip()
}

/// A single-process log: its steady-state iteration, its mini-batch `log_ranks` times (one
/// rank's log cut out of a run). A multi-rank log (launcher labels or a torchrun `--log-dir`
/// tree): the first rank's iteration and each rank's own mini-batch. Every log is read as it
/// streams, twice (its profile, then its steady iterations), never held in memory.
///
/// `batch`: the mini-batch to plan with instead of the one the primitives' `mb` give (`plan
/// --torch-trace` reads it from the trace's tensors, as the whole-step replay scales it).
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
    let loaded = crate::load::logs_and_ranks(&[path.to_path_buf()], None, None, true)?;
    let Some(set) = loaded.ranks.first() else {
        bail!("{source}: a multi-rank log without a rank's lines");
    };
    let n = set.ranks.len() as u64;
    if log_ranks.is_some_and(|k| k != n) {
        bail!("{source}: the log holds {n} ranks (labelled by {launcher}); drop --log-ranks");
    }
    // The loader keeps the ranks' profiles in rank order, as their views.
    let profiles = &loaded.profiles[..set.ranks.len()];
    let steady: Vec<Steady> = match files {
        Some(files) => files
            .iter()
            .zip(profiles)
            .map(|((_, file), p)| {
                let (calls, from) = steady_iteration(open(file)?, p);
                Ok(Steady { calls, from })
            })
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
            first = Some((calls, format!("rank {}: {from}", view.rank), threads));
        }
    }
    let Some((calls, from, threads)) = first else {
        bail!("{source}: a multi-rank log without a rank's lines");
    };
    Ok(Logged {
        steady: Steady { calls, from },
        rank_batches,
        threads,
        outside_per_rank,
        onednn_per_rank,
    })
}

fn open(path: &Path) -> Result<LogInput> {
    LogInput::open(path).with_context(|| format!("{}: cannot read the log", path.display()))
}

/// Each rank's steady iteration (in the order of `set`'s ranks), from one pass over a
/// labelled log.
fn steady_of_labelled(path: &Path, set: &RankSet, profiles: &[Profile]) -> Result<Vec<Steady>> {
    let Source::Labelled {
        launcher, input, ..
    } = rank_logs::split_or_open(path)?
    else {
        bail!("{}: no longer a labelled log", path.display());
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
    let profile = crate::load::profile_with(path, None, None, true, batch.is_some())?;
    let bytes = read_all(path)?;
    let (outside, onednn) = times_of(&iteration_times(&bytes));
    let (calls, from) = steady_iteration(stream(path, bytes), &profile);
    let mb = match batch {
        Some(b) => b,
        None => batch_of(&calls, &from, &path.display().to_string())?,
    };
    let k = usize::try_from(log_ranks.unwrap_or(1))?;
    Ok(Logged {
        steady: Steady { calls, from },
        rank_batches: vec![mb; k],
        threads: profile.metadata.threads.map(u64::from),
        outside_per_rank: vec![outside],
        onednn_per_rank: vec![onednn],
    })
}

fn batch_of(calls: &plan::Iteration, from: &str, source: &str) -> Result<u64> {
    plan::logged_batch(calls).ok_or_else(|| {
        anyhow::anyhow!(
            "{source}: no convolution, inner product or matmul with an `mb` in the steady-state iteration ({from}): the mini-batch, and so the global batch, is unknown"
        )
    })
}
