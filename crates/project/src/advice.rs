//! The projection → advice glue: a what-if replay's projection turned into the plain figures
//! the advice rules take ([`Projected`]), the same figures `project` prints for the log and
//! replay, so that `advise --replay R.json` and `project --replay R.json` agree.

use crate::project::Projection;
use profilednn_advice::{Change, Projected};
use profilednn_analysis::scale::Scale;
use profilednn_analysis::Profile;
use profilednn_model::PrimitiveKind;
use profilednn_replay::Replay;
use profilednn_whatif::{Precision, AS_LOGGED};
use std::path::{Path, PathBuf};

/// More than one log (or rank) given to a what-if projection.
#[derive(Debug, thiserror::Error)]
#[error(
    "{option} projects one process's log: give one LOG (one rank's log of a multi-rank run), \
     not {count} logs or ranks"
)]
pub struct NotOneLog {
    option: String,
    count: usize,
}

/// The one log a projection is of (`option` names the flag asking): what-if replays rewrite
/// one process's iteration.
pub fn one_log<'a>(
    logs: &'a [PathBuf],
    profiles: &'a [Profile],
    option: &str,
) -> Result<(&'a Path, &'a Profile), NotOneLog> {
    match (logs, profiles) {
        ([log], [profile]) => Ok((log, profile)),
        _ => Err(NotOneLog {
            option: option.into(),
            count: profiles.len().max(logs.len()),
        }),
    }
}

/// The advice's figures of `pr`, the projection of `profile`'s log with `replay` (named
/// `name` in the advice).
pub fn projected(pr: &Projection, profile: &Profile, replay: &Replay, name: &str) -> Projected {
    let reorder = |f: fn(&crate::project::GroupProjection) -> f64| {
        pr.groups
            .iter()
            .filter(|g| g.prim_kind == PrimitiveKind::Reorder)
            .map(f)
            .sum::<f64>()
    };
    let what_if = replay.what_if.as_ref().map(|w| &w.what_if);
    // A thread count other than the log's changes the resources, not the work.
    let threads_changed = match (&replay.threads, profile.metadata.threads) {
        (Some(t), Some(n)) => t.trim() != n.to_string(),
        _ => false,
    };
    let change = Change {
        bf16: what_if.is_some_and(|w| w.precision == Some(Precision::Bf16)),
        layout: what_if.map(|w| w.layout).unwrap_or_default(),
        // An isolated replay (benchdnn's view) is not comparable with a what-if's sequence.
        other: threads_changed
            || replay.mode != profilednn_replay::Mode::Sequence
            || what_if.is_some_and(|w| w.batch.is_some() || w.precision == Some(Precision::F32)),
    };
    let transform = match &pr.what_if {
        Some(w) => w.transform.clone(),
        // `project`'s name of the identity what-if (`WhatIf::describe`), so that an as-logged
        // replay is named alike with or without a what-if record.
        None => match &replay.threads {
            Some(t) => format!("{AS_LOGGED} --threads {t}"),
            None => AS_LOGGED.into(),
        },
    };
    Projected {
        transform,
        change,
        replay: name.to_string(),
        per_iteration: pr.scale == Scale::PerIteration,
        logged_onednn_ms: pr.logged_onednn_ms,
        projected_onednn_ms: pr.projected_onednn_ms,
        speedup: Projected::speedup_of(pr.logged_onednn_ms, pr.projected_onednn_ms),
        logged_reorder_ms: reorder(|g| g.logged_ms),
        projected_reorder_ms: reorder(|g| g.projected_ms),
        replayed_with: format!(
            "oneDNN {} on {}",
            replay.onednn,
            replay.cpu.as_deref().unwrap_or("an unknown CPU")
        ),
        as_logged_replay_ms: None,
        speedup_vs_as_logged_replay: None,
        unavailable_here: unavailable_here(replay),
        log_polluted: None,
    }
}

/// `12 of 158 calls per iteration: oneDNN has no bf16 implementation on this CPU (avx2)`, when
/// some problems of the replay could not run for that reason.
fn unavailable_here(replay: &Replay) -> Option<String> {
    let missing = replay.unavailable_here_calls();
    (missing > 0).then(|| {
        format!(
            "{missing} of {} calls{} have no bf16 implementation in oneDNN on this CPU ({})",
            replay.results.iter().map(|r| r.calls).sum::<u64>(),
            if replay.what_if.is_some() {
                " per iteration"
            } else {
                ""
            },
            replay
                .onednn_isa
                .as_deref()
                .unwrap_or("its instruction set")
        )
    })
}
