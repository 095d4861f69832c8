//! A what-if replay run in process: the log's steady-state iteration rewritten by a
//! [`WhatIf`] and replayed in sequence. Shared by `profilednn replay --as/--layout/--batch` and
//! `profilednn advise --project` (through [`crate::Replayer`]), so that advice stands on exactly
//! the replay `replay` writes.

use crate::sequence::{replay_sequence, ResultsFor, SequenceTiming};
use crate::{Progress, Session};
use profilednn_model::Primitive;
use profilednn_replay::sequence::SequenceSummary;
use profilednn_replay::ReplayResult;
use profilednn_whatif::{Record, TransformError, WhatIf};
use std::sync::Arc;

/// The rewritten iteration's results, what the sequence replay ran, and the what-if record.
pub struct WhatIfRun {
    pub results: Vec<ReplayResult>,
    pub sequence: SequenceSummary,
    pub record: Record,
}

/// Rewrites `iteration` (the logged calls in order, from [`steady_iteration`]) with `w` and
/// replays it. `progress` as for [`replay_sequence`].
///
/// [`steady_iteration`]: crate::sequence::steady_iteration
pub fn run(
    s: &Session,
    iteration: &[Arc<Primitive>],
    iteration_from: String,
    w: &WhatIf,
    timing: &SequenceTiming,
    progress: &dyn Progress,
) -> Result<WhatIfRun, TransformError> {
    let t = profilednn_whatif::apply(w, iteration)?;
    let record = Record::new(w, iteration, &t);
    let rewritten: Vec<Arc<Primitive>> = t.calls.iter().map(|c| c.primitive.clone()).collect();
    let (timing, logged) = timing.for_what_if(&t, iteration);
    let (results, mut sequence) = replay_sequence(
        s,
        ResultsFor::Rewritten,
        &rewritten,
        iteration_from,
        &timing,
        progress,
    );
    if let Some(why) = logged {
        sequence.allocation_reason = format!("as logged: {why}");
    }
    Ok(WhatIfRun {
        results,
        sequence,
        record,
    })
}
