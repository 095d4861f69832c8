//! Whether a comparison's figures are per iteration or of the whole logs.

use serde::Serialize;

/// `per_iteration` when both sides' iteration counts are known (a run of 10 iterations and one
/// of 50 compare per iteration), else `total`: the whole logs, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    PerIteration,
    Total,
}
