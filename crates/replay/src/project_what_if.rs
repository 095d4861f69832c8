//! The projection of a what-if replay: the log's steady-state iteration (logged, per group) set
//! against the rewritten iteration as replayed here (projected, per group). The two iterations
//! hold different problems — bf16 convolutions for f32 ones, fewer reorders, autocast's casts —
//! so, unlike the same-machine projection, nothing is matched by problem: the logged side is
//! the log's own time, the projected side the replay's calls × medians.

use crate::native::Replay;
use crate::project::{GroupProjection, Method, Projection};
use crate::transform::Record;
use serde::Serialize;
use std::collections::BTreeMap;

/// Group name of autocast's casts (PyTorch runs them with `aten::to`, outside oneDNN).
pub const CAST_GROUP: &str = "autocast cast";

/// What the what-if assumed and what it changed, in the projection.
#[derive(Debug, Clone, Serialize)]
pub struct WhatIfProjection {
    /// The transform, as on the command line, with the replay's thread count.
    pub transform: String,
    pub assumptions: Vec<String>,
    pub logged_calls_per_iteration: usize,
    pub projected_calls_per_iteration: usize,
    pub removed_calls: usize,
    pub added_calls: usize,
    /// Part of `projected_onednn_ms` spent in autocast's casts (outside oneDNN in PyTorch: a
    /// real autocast run's oneDNN time does not include them).
    pub autocast_casts_ms: f64,
    /// Problems of the rewritten iteration oneDNN could not replay here, with why; their calls
    /// keep the logged time of the same problem when the log has it, else count as zero.
    pub not_replayed: Vec<String>,
}

/// `base` is the projection of the log with nothing replayed (its logged side); the projected
/// side is replaced by the what-if replay `r`.
pub fn project(
    mut base: Projection,
    r: &Replay,
    w: &Record,
    logged_per_call: &BTreeMap<String, f64>,
) -> Projection {
    let mut groups: BTreeMap<(String, String), GroupProjection> = BTreeMap::new();
    for g in base.groups.drain(..) {
        groups.insert(
            (g.prim_kind.clone(), g.prop_kind.clone()),
            GroupProjection {
                projected_ms: 0.0,
                methods: BTreeMap::new(),
                ..g
            },
        );
    }
    let casts: std::collections::BTreeSet<&str> =
        w.autocast_casts.iter().map(|s| s.as_str()).collect();
    let (mut projected, mut cast_ms) = (0.0, 0.0);
    let mut not_replayed = Vec::new();
    for x in &r.results {
        let (method, per_call) = match (&x.measurement, logged_per_call.get(&x.key)) {
            (Some(m), _) => (Method::Replayed, m.median_ms),
            (None, Some(ms)) => (Method::CarriedOver, *ms),
            (None, None) => (Method::CarriedOver, 0.0),
        };
        if x.measurement.is_none() {
            not_replayed.push(format!(
                "{} × {} {} {}: {}",
                x.calls,
                x.prim_kind,
                x.prop_kind,
                x.shapes,
                x.skipped.as_deref().unwrap_or("not replayed")
            ));
        }
        let ms = per_call * x.calls as f64;
        projected += ms;
        let prop = if casts.contains(x.key.as_str()) {
            cast_ms += ms;
            CAST_GROUP.to_string()
        } else {
            x.prop_kind.clone()
        };
        let g = groups
            .entry((x.prim_kind.clone(), prop.clone()))
            .or_insert_with(|| GroupProjection {
                prim_kind: x.prim_kind.clone(),
                prop_kind: prop,
                logged_ms: 0.0,
                projected_ms: 0.0,
                methods: BTreeMap::new(),
                implementation_changed: 0,
            });
        g.projected_ms += ms;
        *g.methods
            .entry(format!("{method:?}").to_lowercase())
            .or_default() += 1;
    }
    let mut groups: Vec<GroupProjection> = groups.into_values().collect();
    groups.sort_by(|a, b| {
        b.logged_ms
            .max(b.projected_ms)
            .total_cmp(&a.logged_ms.max(a.projected_ms))
    });
    base.groups = groups;
    base.projected_onednn_ms = projected;
    base.projected_total_ms = base.residual_ms.map(|x| x + projected);
    let threads = r
        .threads
        .as_deref()
        .map(|t| format!(" --threads {t}"))
        .unwrap_or_default();
    base.target = format!(
        "what-if `{}{threads}` replayed on {} (oneDNN {})",
        w.transform,
        r.cpu.as_deref().unwrap_or("?"),
        r.onednn
    );
    base.method = format!(
        "what-if: the log's steady-state iteration rewritten ({}) and replayed in sequence here; projected = calls per \
         iteration × replayed median, per problem of the rewritten iteration; logged = the log's steady-state oneDNN time \
         per iteration; time outside oneDNN carried over unchanged",
        w.transform
    );
    base.replay_onednn = Some(r.onednn.clone());
    base.replay_mode = Some(r.mode.clone());
    base.coverage = BTreeMap::from([("replayed".to_string(), 1.0)]);
    base.what_if = Some(WhatIfProjection {
        transform: format!("{}{threads}", w.transform),
        assumptions: w.assumptions.clone(),
        logged_calls_per_iteration: w.logged_calls,
        projected_calls_per_iteration: w.calls,
        removed_calls: w.removed,
        added_calls: w.added,
        autocast_casts_ms: cast_ms,
        not_replayed,
    });
    base
}
