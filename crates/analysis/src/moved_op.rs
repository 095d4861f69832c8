//! An eager op whose work a compiled run's Inductor kernels took over: the record both the
//! comparison of two runs (`torch_compare`) and the kernels' grouping (`fused_kernels`) read,
//! kept apart so that neither module imports the other.

use serde::Serialize;

/// An op of the first run whose work the second run's Inductor kernels took over: eager
/// against compiled, which ops were fused into which kernels.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MovedOp {
    pub name: String,
    /// Its time per iteration in the first run, and in the second (what is left of it outside
    /// the kernels).
    pub before_ms: f64,
    pub after_ms: f64,
    /// The second run's kernels whose names list it, most time first.
    pub kernels: Vec<String>,
}
