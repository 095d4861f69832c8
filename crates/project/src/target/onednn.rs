//! The log's oneDNN primitives moved to the target: each problem's steady time × its roofline
//! time on the target over that on the source (its efficiency against the roofs kept).

use super::roofs::Roofs;
use super::Family;
use profilednn_analysis::Profile;
use profilednn_replay::logged::LoggedSteady;
use profilednn_replay::problems;
use std::collections::BTreeMap;

/// The primitives' part, per iteration.
#[derive(Debug, Default)]
pub struct OnednnPart {
    pub logged_ms: f64,
    pub projected_ms: f64,
    pub families: Vec<Family>,
    /// "bf16: avx512_bf16 → amx" with the logged ms it covers.
    pub unit_changes: BTreeMap<String, f64>,
    /// Precisions the target runs emulated (through f32), with the logged ms.
    pub emulated: BTreeMap<String, f64>,
    /// Roofs that stood in (said; widen the band), deduplicated.
    pub stand_ins: Vec<String>,
    /// Logged ms of primitives without a cost (scaled by the costed primitives' ratio).
    pub uncosted_ms: f64,
    pub uncosted_reasons: Vec<String>,
}

/// Projects the log's primitives from `source` to `target` roofs; `per` is the log's
/// iteration count (the divisor of every figure).
pub fn project(
    profile: &Profile,
    logged: Option<&LoggedSteady>,
    source: &Roofs,
    target: &Roofs,
    per: f64,
) -> OnednnPart {
    let mut part = OnednnPart::default();
    let mut fam: BTreeMap<String, Family> = BTreeMap::new();
    let mut uncosted: BTreeMap<String, f64> = BTreeMap::new();
    for pr in problems(profile) {
        let steady = logged
            .and_then(|l| l.medians.get(&pr.key))
            .map_or(pr.steady_ms, |med| med * pr.calls as f64);
        let ms = steady / per;
        part.logged_ms += ms;
        let p = &pr.primitive;
        let kind = p.kind.to_string();
        let Some((ratio, memory)) = ratio_of(p, source, target, &mut part, ms) else {
            *uncosted.entry(kind).or_default() += ms;
            part.uncosted_ms += ms;
            if part.uncosted_reasons.len() < 5 {
                if let Err(e) = profilednn_cost::cost(p) {
                    let r = format!("{} ({})", p.kind, e.reason);
                    if !part.uncosted_reasons.contains(&r) {
                        part.uncosted_reasons.push(r);
                    }
                }
            }
            continue;
        };
        let f = fam
            .entry(kind.clone())
            .or_insert_with(|| Family::new("oneDNN", &kind));
        f.add(ms, ms * ratio, memory);
        part.projected_ms += ms * ratio;
    }
    // The primitives without a cost move as the costed ones did.
    let costed = part.logged_ms - part.uncosted_ms;
    let r = if costed > 0.0 {
        part.projected_ms / costed
    } else {
        1.0
    };
    for (kind, ms) in uncosted {
        let f = fam
            .entry(kind.clone())
            .or_insert_with(|| Family::new("oneDNN", &kind));
        f.add(ms, ms * r, false);
        f.scaled_by = Some("no cost model: the costed primitives' ratio".into());
        part.projected_ms += ms * r;
    }
    part.families = fam.into_values().collect();
    part
}

/// Target roofline time over source roofline time of one primitive, and whether it is memory
/// bound on the target; `None` without a cost or a roof.
fn ratio_of(
    p: &profilednn_model::Primitive,
    source: &Roofs,
    target: &Roofs,
    part: &mut OnednnPart,
    ms: f64,
) -> Option<(f64, bool)> {
    let c = profilednn_cost::cost(p).ok()?;
    let precision = c.precision.as_str();
    let s = source.source(precision, &p.implementation)?;
    let t = target.target(precision)?;
    let flops = c.flops.saturating_add(c.extra_flops);
    let (s_ms, _) = source.time_ms(&s, flops, c.bytes);
    let (t_ms, memory) = target.time_ms(&t, flops, c.bytes);
    if s_ms <= 0.0 {
        return None;
    }
    if s.unit != t.unit && !memory {
        *part
            .unit_changes
            .entry(format!("{precision}: {} → {}", s.unit, t.unit))
            .or_default() += ms;
    }
    if t.emulated && !memory {
        *part.emulated.entry(precision.to_string()).or_default() += ms;
    }
    for why in [s.stand_in, t.stand_in].into_iter().flatten() {
        if !part.stand_ins.contains(&why) {
            part.stand_ins.push(why);
        }
    }
    Some((t_ms / s_ms, memory))
}
