//! The isolated replay, benchdnn's view: each problem of a log timed in its own loop.

use crate::build::chosen_layouts::ChosenLayouts;
use crate::progress::Progress;
use crate::run::Timing;
use crate::Session;
use profilednn_analysis::Profile;
use profilednn_replay::{problems, Problem, ReplayResult, SkipReason};

/// Replays every problem of `profile`, reporting each to `progress` first: once it says stop
/// (Ctrl-C), the problems left are reported as not replayed ([`SkipReason::Interrupted`]) and
/// the results measured so far are kept.
pub fn replay_profile(
    s: &Session,
    profile: &Profile,
    t: &Timing,
    progress: &dyn Progress,
) -> Vec<ReplayResult> {
    let probs = problems(profile);
    let n = probs.len();
    let layouts = ChosenLayouts::of(&s.dnnl, s.engine, probs.iter().map(|p| &*p.primitive));
    let mut going = true;
    probs
        .into_iter()
        .enumerate()
        .map(|(i, pr)| {
            let Problem {
                key,
                primitive: p,
                calls,
                time_ms: time,
                implementations: impls,
                ..
            } = pr;
            going = going && {
                progress.step(i, n, &format!("{} {}", p.kind, p.problem));
                !progress.stopped()
            };
            let r = if going {
                s.replay_with(&p, t, &layouts, progress)
            } else {
                Err(SkipReason::Interrupted)
            };
            let (measurement, skipped) = match r {
                Ok(m) => (Some(m), None),
                Err(e) => (None, Some(e)),
            };
            ReplayResult {
                implementation_matches: measurement
                    .as_ref()
                    .map(|m| impls.contains(&m.implementation)),
                key,
                prim_kind: p.kind.clone(),
                prop_kind: p.prop_kind.to_string(),
                shapes: p.problem.clone(),
                calls,
                log_time_ms: time,
                log_implementations: impls,
                measurement,
                skipped,
            }
        })
        .collect()
}
