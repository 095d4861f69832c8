//! The projection of a what-if replay: the log's steady-state iteration (logged, per group) set
//! against the rewritten iteration as replayed here (projected, per group). The two iterations
//! hold different problems — bf16 convolutions for f32 ones, fewer reorders, autocast's casts —
//! so, unlike the same-machine projection, nothing is matched by problem: the logged side is
//! the log's own time, the projected side the replay's calls × medians.

use super::{GroupProjection, Method, Projection};
use profilednn_model::PrimitiveKind;
use profilednn_replay::Replay;
use profilednn_whatif::Record;
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
    /// keep the logged time of the problem they were rewritten from (an RNN in bf16 keeps its
    /// f32 time: the replay does not build RNNs), else count as zero (an added cast).
    pub not_replayed: Vec<String>,
    /// Calls per iteration of bf16 problems oneDNN has no implementation of on this CPU (an
    /// AVX2-only CPU): the framework would run them outside oneDNN, so the projection is no
    /// estimate of the change here. 0 where everything could run.
    pub unavailable_here_calls: u64,
}

/// `base` is the projection of the log with nothing replayed (its logged side); the projected
/// side is replaced by the what-if replay `r`.
pub fn project(
    mut base: Projection,
    r: &Replay,
    w: &Record,
    logged_per_call: &BTreeMap<String, f64>,
) -> Projection {
    let mut groups: BTreeMap<(PrimitiveKind, String), GroupProjection> = BTreeMap::new();
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
        let logged = logged_per_call.get(&x.key).or_else(|| {
            w.rewritten_from
                .get(&x.key)
                .and_then(|k| logged_per_call.get(k))
        });
        let (method, per_call) = match (&x.measurement, logged) {
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
                x.skipped
                    .as_ref()
                    .map_or_else(|| "not replayed".to_string(), |r| r.to_string())
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
        *g.methods.entry(method).or_default() += 1;
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
    // How the logged projection got the time outside oneDNN (its method's last clause).
    let outside = ["; time outside oneDNN", "; the log has no timestamps"]
        .iter()
        .find_map(|c| base.method.find(c))
        .map_or(String::new(), |i| base.method[i..].to_string());
    base.method = format!(
        "what-if: the log's steady-state iteration rewritten ({}) and replayed in sequence here; projected = calls per \
         iteration × replayed median, per problem of the rewritten iteration; logged = the log's steady-state oneDNN time \
         per iteration{outside}",
        w.transform
    );
    base.replay_onednn = Some(r.onednn.clone());
    base.version_gap = crate::project::version_gap::of(&base.log_onednn, Some(&r.onednn));
    base.replay_mode = Some(r.mode);
    base.replay_allocation = crate::project::allocation_of(r);
    base.coverage = BTreeMap::from([(Method::Replayed, 1.0)]);
    base.what_if = Some(WhatIfProjection {
        transform: format!("{}{threads}", w.transform),
        assumptions: w.assumptions.clone(),
        logged_calls_per_iteration: w.logged_calls,
        projected_calls_per_iteration: w.calls,
        removed_calls: w.removed,
        added_calls: w.added,
        autocast_casts_ms: cast_ms,
        not_replayed,
        unavailable_here_calls: r.unavailable_here_calls(),
    });
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_analysis::profile::ProfileOptions;
    use profilednn_analysis::{Profile, Tally};
    use profilednn_replay::Measurement;
    use profilednn_replay::{ReplayResult, SkipReason};
    use profilednn_whatif::{Record, WhatIf};

    fn result(key: &str, kind: &str, calls: u64, median_ms: Option<f64>) -> ReplayResult {
        ReplayResult {
            key: key.into(),
            prim_kind: PrimitiveKind::parse(kind),
            prop_kind: "forward_training".into(),
            shapes: String::new(),
            calls,
            log_time_ms: 0.0,
            log_implementations: vec![],
            measurement: median_ms.map(|m| Measurement {
                implementation: "x".into(),
                runs: 5,
                median_ms: m,
                min_ms: m,
                max_ms: m,
                p10_ms: m,
                p90_ms: m,
            }),
            implementation_matches: None,
            skipped: median_ms
                .is_none()
                .then(|| SkipReason::recorded("refused".into(), "unimplemented".into())),
        }
    }

    /// Logged: one iteration of two convolution calls of 2 ms and 4 ms. Rewritten: a replayed
    /// problem (3 calls × 1.5 ms), a cast (2 × 0.25 ms), and a problem oneDNN refused that
    /// keeps the logged per-call time of the problem it came from (4 ms). Projected by hand:
    /// 4.5 + 0.5 + 4 = 9 ms, of which 0.5 ms casts.
    #[test]
    fn projected_side_is_the_rewritten_iteration() {
        let log = "profilednn,iteration,0\n\
onednn_verbose,v1,primitive,exec,cpu,convolution,jit,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,2\n\
onednn_verbose,v1,primitive,exec,cpu,convolution,jit,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,,alg:convolution_direct,mb2_ic16oc32_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,4\n\
profilednn,iteration,1\n";
        let mut t = Tally::default();
        t.consume_chunk(0, log.as_bytes(), true);
        let profile = Profile::from_tally("test".into(), &t, &ProfileOptions::default());
        let logged_keys: Vec<String> = profilednn_replay::problems(&profile)
            .into_iter()
            .map(|p| p.key)
            .collect();
        let refused_from = logged_keys
            .iter()
            .find(|k| k.contains("oc32"))
            .unwrap()
            .clone();
        let record = Record {
            transform: "--as bf16".into(),
            what_if: WhatIf::default(),
            assumptions: vec!["assumed".into()],
            logged_calls: 2,
            calls: 6,
            removed: 0,
            added: 2,
            autocast_casts: vec!["cast".into()],
            rewritten_from: [("refused".to_string(), refused_from)].into(),
            logged_keys: logged_keys.clone(),
        };
        let replay = profilednn_replay::Replay {
            schema: profilednn_replay::SCHEMA.into(),
            source: "test".into(),
            onednn: "3.2".into(),
            library: String::new(),
            onednn_isa: None,
            cpu: None,
            threads: Some("2".into()),
            binding: None,
            mode: profilednn_replay::Mode::Sequence,
            sequence: None,
            what_if: Some(record),
            results: vec![
                result("conv", "convolution", 3, Some(1.5)),
                result("cast", "reorder", 2, Some(0.25)),
                result("refused", "convolution", 1, None),
            ],
            framework: None,
        };
        let p = crate::project::project(&profile, Some(&replay), None, None);
        assert!(
            (p.projected_onednn_ms - 9.0).abs() < 1e-9,
            "{}",
            p.projected_onednn_ms
        );
        let w = p.what_if.as_ref().unwrap();
        assert!((w.autocast_casts_ms - 0.5).abs() < 1e-9);
        assert_eq!(w.transform, "--as bf16 --threads 2");
        assert_eq!(w.not_replayed.len(), 1);
        let cast = p.groups.iter().find(|g| g.prop_kind == CAST_GROUP).unwrap();
        assert_eq!((cast.logged_ms, cast.projected_ms), (0.0, 0.5));
        let conv = p
            .groups
            .iter()
            .find(|g| g.prim_kind == PrimitiveKind::Convolution)
            .unwrap();
        assert!((conv.projected_ms - 8.5).abs() < 1e-9);
        assert!(conv.logged_ms > 0.0);
        let m = p.replay_match.as_ref().unwrap();
        assert_eq!((m.log_problems, m.matched_problems), (2, 2));
        // The same replay against a log it was not made from matches nothing.
        let mut other = replay.clone();
        other.what_if.as_mut().unwrap().logged_keys = vec!["another log's problem".into()];
        let p = crate::project::project(&profile, Some(&other), None, None);
        assert_eq!(p.replay_match.unwrap().matched_problems, 0);
    }
}
