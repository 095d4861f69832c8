//! The identity of a problem, shared by logs, replay results and projections.

use profilednn_model::Primitive;

/// The identity of a problem: its benchdnn line (implementation not included), or, for a kind
/// benchdnn has no driver for, its kind, direction, descriptors, extensions and problem.
pub fn problem_key(q: &Primitive) -> String {
    crate::line(q)
        .map(|(d, l)| format!("--{d} {l}"))
        .unwrap_or_else(|| {
            format!(
                "{} {} {} {} {}",
                q.kind,
                q.prop_kind,
                q.mds_string(),
                q.exts_string(),
                q.problem
            )
        })
}
