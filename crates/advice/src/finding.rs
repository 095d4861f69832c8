//! What advice looks like: findings with evidence, gain and action; and which rules were quiet.

use crate::{NotRecommended, Projected, Thresholds};
use serde::Serialize;
use serde_json::{Map, Value};

pub const SCHEMA: &str = "profilednn.advice.v1";

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable rule id naming its subject (`reorder-overhead`).
    pub id: &'static str,
    /// One sentence with the numbers.
    pub title: String,
    /// Named figures behind the finding (shares, times, counts, example primitives).
    pub evidence: Map<String, Value>,
    /// Estimated oneDNN time saved, ms over the whole log (`None`: not estimable from the log).
    pub gain_ms: Option<f64>,
    /// The same per iteration, when the iteration count is known.
    pub gain_ms_per_iteration: Option<f64>,
    /// How the gain was estimated.
    pub gain_basis: String,
    /// The concrete change to try.
    pub action: String,
    /// The what-if projection the finding's gain stands on, when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projected>,
    /// Set by a rule whose change is projected slower on this machine: why it is not
    /// recommended. [`crate::advise`] then lists it in [`Advice::not_recommended`], not as a
    /// finding.
    #[serde(skip)]
    pub not_recommended: Option<String>,
    /// The share of the wall-clock step the finding concerns (its time, else the time it could
    /// gain, over the span of the log's timestamps): findings are ranked by it when the log has
    /// timestamps, so that 2 % of a step spent in reorders does not come before 94 % outside
    /// oneDNN. Absent without timestamps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_share: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RuleOutcome {
    pub id: &'static str,
    pub fired: bool,
    /// Why the rule did not fire (or could not be checked).
    pub why_not: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    pub schema: &'static str,
    pub total_time_ms: f64,
    pub iterations: Option<u64>,
    pub thresholds: Thresholds,
    /// Largest estimated gain first.
    pub findings: Vec<Finding>,
    /// Every rule, fired or not.
    pub rules: Vec<RuleOutcome>,
    /// The what-if projections given (`--replay`, `--project`); absent without any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub projections: Vec<Projected>,
    /// The whole-step what-ifs given (a replay file with the whole step, or `--project
    /// --torch-trace`); absent without any. Where one exists it is the headline of its change,
    /// and the oneDNN projection of the same change a part of it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub step_projections: Vec<crate::StepWhatIf>,
    /// Rules that stayed quiet because their change is projected slower on this machine.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_recommended: Vec<NotRecommended>,
}

impl Advice {
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }
}
