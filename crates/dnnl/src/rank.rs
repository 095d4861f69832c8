//! One rank of a split, replayed: the log's steady-state iteration rewritten to the rank's
//! mini-batch (the `--batch` what-if) and run through oneDNN at the rank's thread count.

use super::sequence::{replay_sequence, ResultsFor, SequenceTiming};
use super::{Progress, Session};
use profilednn_model::Primitive;
use profilednn_whatif::WhatIf;
use std::sync::Arc;

/// The replayed iteration of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct RankReplay {
    /// oneDNN milliseconds per iteration: calls × median of every replayed problem.
    pub onednn_ms: f64,
    /// Problems of the rewritten iteration oneDNN could not replay here (not in `onednn_ms`).
    pub not_replayed: usize,
    pub problems: usize,
}

/// Replays `iteration` (the logged calls, in order) at `threads` threads and mini-batch
/// `batch`. `progress` as for [`replay_sequence`].
pub fn rank(
    s: &Session,
    iteration: &[Arc<Primitive>],
    iteration_from: &str,
    threads: u64,
    batch: u64,
    timing: &SequenceTiming,
    progress: &dyn Progress,
) -> Result<RankReplay, String> {
    s.set_threads(threads)?;
    let w = WhatIf {
        batch: Some(batch),
        ..Default::default()
    };
    let t = profilednn_whatif::apply(&w, iteration).map_err(|e| e.to_string())?;
    let rewritten: Vec<Arc<Primitive>> = t.calls.iter().map(|c| c.primitive.clone()).collect();
    let (timing, _) = timing.for_what_if(&t, iteration);
    let (results, _) = replay_sequence(
        s,
        ResultsFor::Rewritten,
        &rewritten,
        iteration_from.to_string(),
        &timing,
        progress,
    );
    let onednn_ms = results
        .iter()
        .filter_map(|r| r.measurement.as_ref().map(|m| m.median_ms * r.calls as f64))
        .sum();
    Ok(RankReplay {
        onednn_ms,
        not_replayed: results.iter().filter(|r| r.measurement.is_none()).count(),
        problems: results.len(),
    })
}
