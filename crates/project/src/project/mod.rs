//! Projected training time on a target machine: each problem's logged calls times its time
//! there (replayed, or the roofline's when only a machine profile is known), plus the time the
//! source run spent outside oneDNN, carried over unchanged.

pub mod headline;
pub mod mismatch;
pub mod step;
pub mod step_what_if;
pub mod version_gap;
pub mod what_if;

use profilednn_analysis::scale::Scale;
use profilednn_analysis::Profile;
use profilednn_machine::MachineProfile;
use profilednn_model::PrimitiveKind;
use profilednn_replay::logged::LoggedSteady;
use profilednn_replay::{problems, Replay};
use serde::Serialize;
use std::collections::BTreeMap;

/// How a problem's time on the target was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
///
/// The variants stand in the order of their names, so that maps keyed by them list them as
/// their JSON keys sort (`carried_over`, `replayed`, `roofline`).
pub enum Method {
    /// Neither: the source run's own time.
    CarriedOver,
    /// Median of the replay on the target.
    Replayed,
    /// The roofline of the target's machine profile (a lower bound: best case).
    Roofline,
}

impl Method {
    /// The name the JSON and the terminal give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::CarriedOver => "carried_over",
            Method::Replayed => "replayed",
            Method::Roofline => "roofline",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupProjection {
    pub prim_kind: PrimitiveKind,
    pub prop_kind: String,
    pub logged_ms: f64,
    pub projected_ms: f64,
    pub methods: BTreeMap<Method, usize>,
    /// Replayed problems of the group for which oneDNN picked another implementation than the
    /// log's (expected when the replaying oneDNN or CPU differs from the log's).
    pub implementation_changed: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Projection {
    pub schema: &'static str,
    pub source: String,
    pub target: String,
    /// Per iteration when the log's iteration count is known, else the whole log.
    pub scale: Scale,
    pub iterations: Option<u64>,
    /// Logged oneDNN time, steady state: each problem's calls × the median of its calls after
    /// the warm-up ([`profilednn_replay::logged::logged_steady`]); without those (stdin), its slowest call (its cold
    /// start) replaced by the mean of its other calls. This is what the projection is compared
    /// with.
    pub logged_onednn_ms: f64,
    /// Logged oneDNN time as is, cold starts included.
    pub logged_onednn_raw_ms: f64,
    pub projected_onednn_ms: f64,
    /// Source run's time outside oneDNN per iteration, if known: the median over its steady
    /// iterations (iteration markers and timestamps, warm-up left out), else the timestamps'
    /// span minus oneDNN time over the iterations.
    pub residual_ms: Option<f64>,
    pub logged_total_ms: Option<f64>,
    pub projected_total_ms: Option<f64>,
    /// Share of logged oneDNN time per method.
    pub coverage: BTreeMap<Method, f64>,
    pub groups: Vec<GroupProjection>,
    pub method: String,
    /// oneDNN versions the log was recorded with (from its header lines).
    pub log_onednn: Vec<String>,
    /// oneDNN the replay ran with, and how (`sequence` or `isolated`).
    pub replay_onednn: Option<String>,
    /// The log's and the replay's oneDNN when their versions differ, and the gap assumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_gap: Option<version_gap::VersionGap>,
    pub replay_mode: Option<profilednn_replay::Mode>,
    /// How a sequence replay allocated each call's memory (`once`, `per-call`, with the heap
    /// whose pages it took), and why.
    pub replay_allocation: Option<String>,
    /// How well the replay results belong to this log (with `--replay`).
    pub replay_match: Option<ReplayMatch>,
    /// How sure the replay's figure is: the relative half-width of the confidence interval of
    /// the sequence replay's median over blocks (0.02: ±2 %; `SequenceSummary::dispersion`).
    /// `None` for an isolated replay or one of fewer than 5 blocks. A projection error within
    /// this is noise of the replay, not a finding.
    pub replay_dispersion: Option<f64>,
    /// The what-if the replay ran (`replay --as/--layout/--batch`): `projected_onednn_ms` is
    /// then the rewritten iteration's time here, per iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<crate::project::what_if::WhatIfProjection>,
    /// The whole step, with a replay made with `--torch-trace`: the recorded steady step (wall
    /// time of the trace's replayed iteration) and the step here, its framework ops at their
    /// replayed time and the rest carried over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logged_step_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projected_step_ms: Option<f64>,
    /// How the whole step's projection is made up, per phase and per family.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<crate::project::step::StepProjection>,
    /// The one figure to lead with: the whole step when `step` is there, else the training
    /// step, else oneDNN; the oneDNN-only figure a part of it ([`headline::Headline::of`]).
    pub headline: headline::Headline,
}

/// The replay's problems checked against the log's, by key: a replay of another log matches
/// few or none, and then the projection is only the log's own time carried over.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayMatch {
    /// The log the replay was made from (its `source`).
    pub replay_source: String,
    pub replay_problems: usize,
    pub log_problems: usize,
    /// Log problems with a result in the replay (replayed or skipped there).
    pub matched_problems: usize,
    /// Their share of the log's steady-state oneDNN time.
    pub matched_time_share: f64,
}

impl ReplayMatch {
    /// Below this share of the log's time matched, the replay is probably of another log.
    pub const FEW: f64 = 0.5;
}

/// Projects `profile` (the log) onto `replay` and/or `machine`; `logged` is what a second pass
/// over the log file read ([`profilednn_replay::logged::logged_steady`]): its steady-state medians and
/// outside time (none from stdin, which is read once).
pub fn project(
    profile: &Profile,
    replay: Option<&Replay>,
    machine: Option<&MachineProfile>,
    logged: Option<&LoggedSteady>,
) -> Projection {
    let mut p = match replay.and_then(|r| Some((r, r.what_if.as_ref()?))) {
        Some((r, w)) => project_what_if(profile, r, w, machine, logged),
        None => project_logged(profile, replay, machine, logged),
    };
    p.replay_dispersion = replay.and_then(|r| r.sequence.as_ref()?.dispersion);
    if let Some(f) = replay.and_then(|r| r.framework.as_ref()) {
        let step = step::StepProjection::of(f);
        p.logged_step_ms = Some(step.logged_step_ms);
        p.projected_step_ms = Some(step.projected_step_ms);
        p.step = Some(step);
    }
    p.headline = headline::Headline::of(&p);
    p
}

/// The projection of the log's own problems (a replay of this log, a machine profile, or
/// neither).
fn project_logged(
    profile: &Profile,
    replay: Option<&Replay>,
    machine: Option<&MachineProfile>,
    logged: Option<&LoggedSteady>,
) -> Projection {
    let medians = logged.map(|l| &l.medians);
    let steady_outside = logged.and_then(|l| l.outside);
    let iters = profile
        .iterations
        .as_ref()
        .map(|i| i.count)
        .filter(|n| *n > 0);
    let scale = iters.map_or(1.0, |n| n as f64);
    let ReplayIndex {
        replayed,
        changed,
        keys: replay_keys,
    } = ReplayIndex::of(replay);
    let (mut log_problems, mut matched_problems, mut matched_ms) = (0usize, 0usize, 0.0);
    let mut groups: BTreeMap<(String, String), GroupProjection> = BTreeMap::new();
    let mut coverage: BTreeMap<Method, f64> = BTreeMap::new();
    let (mut logged, mut raw, mut projected) = (0.0, 0.0, 0.0);
    for pr in problems(profile) {
        let steady = medians
            .and_then(|m| m.get(&pr.key))
            .map_or(pr.steady_ms, |med| med * pr.calls as f64);
        let (key, p, calls, time) = (pr.key, pr.primitive, pr.calls, steady);
        raw += pr.time_ms / scale;
        let roofline = || {
            let m = machine?;
            let c = profilednn_cost::cost(&p).ok()?;
            // The unit the implementation ran on (AMX, dot product, FMA), as in `report`.
            let peak = m
                .peak_choice_for(c.precision.as_str(), Some(p.implementation.as_str()))
                .ok()?;
            let r = m.roofline_at(peak.gflops, c.flops.saturating_add(c.extra_flops), c.bytes);
            Some(r.min_seconds * 1e3)
        };
        let (method, per_call) = match replayed.get(key.as_str()) {
            Some(ms) => (Method::Replayed, *ms),
            None => match roofline() {
                Some(ms) => (Method::Roofline, ms),
                None => (Method::CarriedOver, time / calls.max(1) as f64),
            },
        };
        let proj = per_call * calls as f64 / scale;
        let log = time / scale;
        log_problems += 1;
        if replay_keys.contains(key.as_str()) {
            matched_problems += 1;
            matched_ms += log;
        }
        logged += log;
        projected += proj;
        *coverage.entry(method).or_default() += log;
        let g = groups
            .entry((p.kind.to_string(), p.prop_kind.to_string()))
            .or_insert_with(|| GroupProjection {
                prim_kind: p.kind.clone(),
                prop_kind: p.prop_kind.to_string(),
                logged_ms: 0.0,
                projected_ms: 0.0,
                methods: BTreeMap::new(),
                implementation_changed: 0,
            });
        if changed.contains(key.as_str()) {
            g.implementation_changed += 1;
        }
        g.logged_ms += log;
        g.projected_ms += proj;
        *g.methods.entry(method).or_default() += 1;
    }
    for v in coverage.values_mut() {
        *v = if logged > 0.0 { *v / logged } else { 0.0 };
    }
    let mut groups: Vec<GroupProjection> = groups.into_values().collect();
    groups.sort_by(|a, b| b.logged_ms.total_cmp(&a.logged_ms));
    let (residual, outside) =
        outside_of(profile, steady_outside.filter(|_| iters.is_some()), scale);
    let (target, method) = describe(replay, machine, medians.is_some(), outside);
    Projection {
        schema: "profilednn.projection.v1",
        source: profile.sources.join(", "),
        target,
        scale: if iters.is_some() {
            Scale::PerIteration
        } else {
            Scale::Total
        },
        iterations: iters,
        logged_onednn_ms: logged,
        logged_onednn_raw_ms: raw,
        projected_onednn_ms: projected,
        residual_ms: residual,
        logged_total_ms: residual.map(|r| r + logged),
        projected_total_ms: residual.map(|r| r + projected),
        coverage,
        groups,
        method,
        log_onednn: profile.metadata.versions.clone(),
        replay_onednn: replay.map(|r| r.onednn.clone()),
        version_gap: version_gap::of(
            &profile.metadata.versions,
            replay.map(|r| r.onednn.as_str()),
        ),
        replay_mode: replay.map(|r| r.mode),
        replay_allocation: replay.and_then(allocation_of),
        replay_match: replay.map(|r| ReplayMatch {
            replay_source: r.source.clone(),
            replay_problems: r.results.len(),
            log_problems,
            matched_problems,
            matched_time_share: if logged > 0.0 {
                matched_ms / logged
            } else {
                0.0
            },
        }),
        replay_dispersion: None,
        what_if: None,
        logged_step_ms: None,
        projected_step_ms: None,
        step: None,
        headline: Default::default(),
    }
}

/// A replay's results by problem key: the replayed per-call medians, the problems whose
/// implementation changed, and every key replayed.
struct ReplayIndex<'r> {
    replayed: BTreeMap<&'r str, f64>,
    changed: std::collections::BTreeSet<&'r str>,
    keys: std::collections::BTreeSet<&'r str>,
}

impl<'r> ReplayIndex<'r> {
    fn of(replay: Option<&'r Replay>) -> ReplayIndex<'r> {
        let results = replay.map_or(&[][..], |r| &r.results[..]);
        ReplayIndex {
            replayed: results
                .iter()
                .filter_map(|x| Some((x.key.as_str(), x.measurement.as_ref()?.median_ms)))
                .collect(),
            changed: results
                .iter()
                .filter(|x| x.implementation_matches == Some(false))
                .map(|x| x.key.as_str())
                .collect(),
            keys: results.iter().map(|x| x.key.as_str()).collect(),
        }
    }
}

/// Time outside oneDNN, per iteration or in all, and how it was found: the steady iterations'
/// median (`steady`, per iteration: given only when the projection is per iteration), else the
/// timestamps' span over the iterations (the first iteration's creation and allocations
/// included).
fn outside_of(
    profile: &Profile,
    steady: Option<(f64, usize)>,
    scale: f64,
) -> (Option<f64>, Outside) {
    let residual = steady.map(|(ms, _)| ms).or_else(|| {
        profile
            .timestamps
            .map(|(a, b)| ((b - a) - profile.exec_time_ms()).max(0.0) / scale)
    });
    let outside = match (steady, residual) {
        (Some((_, n)), _) => Outside::Steady(n),
        (None, Some(_)) => Outside::Span,
        _ => Outside::Unknown,
    };
    (residual, outside)
}

/// The projection of a what-if replay: the logged view of this log (per-call times as logged,
/// or `medians`), checked to be the log the replay rewrote, then the rewritten iteration.
fn project_what_if(
    profile: &Profile,
    r: &Replay,
    w: &profilednn_whatif::Record,
    machine: Option<&MachineProfile>,
    logged: Option<&LoggedSteady>,
) -> Projection {
    let medians = logged.map(|l| &l.medians);
    let per_call = problems(profile)
        .into_iter()
        .map(|p| {
            let ms = medians
                .and_then(|m| m.get(&p.key).copied())
                .unwrap_or(p.steady_ms / p.calls.max(1) as f64);
            (p.key, ms)
        })
        .collect();
    let mut base = project(profile, None, machine, logged);
    // The replay is of this log when the log's problems are the iteration it rewrote.
    let logged_keys: std::collections::BTreeSet<&str> =
        w.logged_keys.iter().map(|k| k.as_str()).collect();
    let all = problems(profile);
    let matched: Vec<_> = all
        .iter()
        .filter(|p| logged_keys.contains(p.key.as_str()))
        .collect();
    let total: f64 = all.iter().map(|p| p.steady_ms).sum();
    base.replay_match = Some(ReplayMatch {
        replay_source: r.source.clone(),
        replay_problems: r.results.len(),
        log_problems: all.len(),
        matched_problems: matched.len(),
        matched_time_share: if total > 0.0 {
            matched.iter().map(|p| p.steady_ms).sum::<f64>() / total
        } else {
            0.0
        },
    });
    crate::project::what_if::project(base, r, w, &per_call)
}

/// Where the time outside oneDNN came from.
#[derive(Clone, Copy)]
enum Outside {
    /// The median over this many steady iterations (markers and timestamps).
    Steady(usize),
    /// The timestamps' span over all iterations.
    Span,
    /// No timestamps.
    Unknown,
}

/// What the projection is onto, and how each figure was obtained (the `target` and `method`
/// texts of the projection).
fn describe(
    replay: Option<&Replay>,
    machine: Option<&MachineProfile>,
    medians: bool,
    outside: Outside,
) -> (String, String) {
    let target = match (replay, machine) {
        (Some(r), _) => format!(
            "replay on {} (oneDNN {})",
            r.cpu.as_deref().unwrap_or("?"),
            r.onednn
        ),
        (None, Some(m)) => format!("roofline of {}", m.name),
        _ => "nothing (times carried over)".into(),
    };
    let method = format!(
        "each unique problem: logged calls × {}; problems without a target time keep their logged time; logged times are steady state ({}){}",
        match (replay.is_some(), machine.is_some()) {
            (true, true) => "replayed median (else the machine profile's roofline, a best case)",
            (true, false) => "replayed median",
            (false, true) => "roofline time of the machine profile (a best case)",
            _ => "logged time",
        },
        if medians {
            "calls × the median of the problem's logged calls after its first third (warm-up)"
        } else {
            "each problem's slowest call, its cold start, replaced by the mean of the others"
        },
        match outside {
            Outside::Steady(n) => format!("; time outside oneDNN (the median over {n} steady iterations of each one's timestamps' span minus its oneDNN time; the first third are warm-up) carried over unchanged"),
            Outside::Span => "; time outside oneDNN (timestamps' span minus oneDNN time, over all iterations) carried over unchanged".to_string(),
            Outside::Unknown => "; the log has no timestamps, so time outside oneDNN is unknown and not included".to_string(),
        }
    );
    (target, method)
}

/// A sequence replay's allocation and its reason, as `project` states it.
pub(crate) fn allocation_of(r: &profilednn_replay::Replay) -> Option<String> {
    let q = r.sequence.as_ref()?;
    let a = q.allocation?;
    let mut s = if q.allocation_reason.is_empty() {
        a.as_str().to_string()
    } else {
        format!("{} ({})", a.as_str(), q.allocation_reason)
    };
    match q.heap {
        Some(h) => {
            s += &format!("; heap {}", h.as_str());
            if !q.heap_reason.is_empty() {
                s += &format!(" ({})", q.heap_reason);
            }
        }
        // A results file from before the heap was chosen: its buffers came from the C heap.
        None if a == profilednn_replay::allocation::Allocation::PerCall => {
            s += "; heap glibc (a results file from before the heap was read from the log)";
        }
        None => {}
    }
    Some(s)
}
