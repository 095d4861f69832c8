//! Replay results that may be of another log than the one projected: how much of the log
//! they cover, and whether that is refused, warned of or allowed. A projection mostly of
//! another log's problems would state a gain that is not this log's, so what each caller
//! tolerates is its [`Mismatch`].

use super::{project, Projection, ReplayMatch};
use profilednn_analysis::Profile;
use profilednn_machine::MachineProfile;
use profilednn_replay::logged::LoggedSteady;
use profilednn_replay::Replay;
use std::path::Path;

/// Replay results refused as not of the projected log; says how to get ones that are.
#[derive(Debug, thiserror::Error)]
#[error(
    "the replay results are not of this log: {what}. Replay this log \
     (`profilednn replay LOG`){hint}"
)]
pub struct MismatchError {
    /// How many of the log's problems, and how much of its time, the replay covers.
    what: String,
    hint: &'static str,
}

/// What to do with replay results that may be of another log.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mismatch {
    /// `project`: an error when no problem matches, a warning when few do.
    RefuseNone,
    /// `project --allow-mismatch`: a warning when few match.
    Allow,
    /// Advice: an error when few match (a projection mostly of another log's problems would
    /// state a gain that is not this log's).
    RefuseFew,
}

impl Mismatch {
    /// Whether replay results matching the log as `m` says are refused.
    fn refuses(self, m: &ReplayMatch) -> bool {
        match self {
            Mismatch::RefuseNone => m.matched_problems == 0,
            Mismatch::Allow => false,
            Mismatch::RefuseFew => m.matched_time_share < ReplayMatch::FEW,
        }
    }
}

/// The logged times of `log`: the medians of a second pass over it (none from stdin, which is
/// read once, nor from a launcher-labelled log, which reads as no events here).
pub fn logged_of(log: &Path) -> Option<LoggedSteady> {
    if log.as_os_str() == "-" {
        return None;
    }
    let one_process = profilednn_analysis::ranks::logs::is_one_process(log);
    profilednn_verbose::LogInput::open(log)
        .ok()
        .map(|input| profilednn_replay::logged::logged_steady(input, one_process))
        .filter(|l| !l.medians.is_empty())
}

/// Projects `log` (read into `profile`) with `replay` and `machine`, as `project` does: logged
/// times are the medians of a second pass over the log (not for stdin). A replay of another
/// log is handled as `mismatch` says: refused, or projected with the warning returned beside
/// the projection (for the caller to print).
pub fn projection(
    log: &Path,
    profile: &Profile,
    replay: Option<&Replay>,
    machine: Option<&MachineProfile>,
    mismatch: Mismatch,
) -> Result<(Projection, Option<String>), MismatchError> {
    let pr = project(profile, replay, machine, logged_of(log).as_ref());
    // A whole-step replay made without oneDNN holds no primitive to match: its framework ops
    // are the trace's, and the log's oneDNN figures are carried over.
    let framework_only = replay.is_some_and(|r| r.results.is_empty() && r.framework.is_some());
    if let (Some(m), false) = (&pr.replay_match, framework_only) {
        let what = format!(
            "{} of the log's {} problems ({:.1}% of its oneDNN time) have a result in the replay \
             ({} problems); log: {}; replay made from: {}",
            m.matched_problems,
            m.log_problems,
            m.matched_time_share * 100.0,
            m.replay_problems,
            pr.source,
            m.replay_source
        );
        if mismatch.refuses(m) {
            return Err(MismatchError {
                what,
                hint: if mismatch == Mismatch::RefuseNone {
                    ", or pass --allow-mismatch to project anyway"
                } else {
                    ""
                },
            });
        }
        if m.matched_time_share < ReplayMatch::FEW {
            let rest = if machine.is_some() {
                "projected with the machine profile's roofline"
            } else {
                "carried over unchanged"
            };
            let warning =
                format!("the replay results may be of another log: {what}; the rest is {rest}");
            return Ok((pr, Some(warning)));
        }
    }
    Ok((pr, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_refuses_none_matched_advice_refuses_few() {
        let matched = |problems, share| ReplayMatch {
            replay_source: "other.log".into(),
            replay_problems: 10,
            log_problems: 10,
            matched_problems: problems,
            matched_time_share: share,
        };
        let (none, few, most) = (matched(0, 0.0), matched(3, 0.2), matched(9, 0.9));
        assert!(Mismatch::RefuseNone.refuses(&none));
        assert!(!Mismatch::RefuseNone.refuses(&few));
        assert!(Mismatch::RefuseFew.refuses(&few));
        assert!(!Mismatch::RefuseFew.refuses(&most));
        assert!(!Mismatch::Allow.refuses(&none));
        let e = MismatchError {
            what: "0 of 10".into(),
            hint: ", or pass --allow-mismatch to project anyway",
        };
        assert_eq!(
            e.to_string(),
            "the replay results are not of this log: 0 of 10. Replay this log (`profilednn \
             replay LOG`), or pass --allow-mismatch to project anyway"
        );
    }
}
