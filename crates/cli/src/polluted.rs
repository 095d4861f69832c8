//! Whether a log's timings look polluted, for the commands that set a replay against the log
//! (`replay`, `project`): the rule `advise` fires (`timings-polluted`), asked once here.

use profilednn_advice::{log_pollution, Evidence, Thresholds};
use profilednn_analysis::{summarize, Profile, SummaryOptions};
use std::collections::HashSet;

/// Why the log's ratios are withheld, and the problem keys (benchdnn lines) of the primitives
/// whose calls ran far apart; `None` on a quiet log.
pub struct Withheld {
    pub reason: String,
    pub keys: HashSet<String>,
}

pub fn of(profile: &Profile) -> Option<Withheld> {
    let summary = summarize(std::slice::from_ref(profile), &SummaryOptions::default());
    let ev = Evidence::from_profiles(std::slice::from_ref(profile), profile, &summary, None, None);
    let (reason, primitives) = log_pollution(&ev, &Thresholds::default())?;
    Some(Withheld {
        reason,
        keys: primitives
            .iter()
            .map(|p| profilednn_benchdnn::problem_key(p))
            .collect(),
    })
}
