//! The trace's framework ops (BLAS GEMMs, ATen attention, element-wise ops, optimizer steps)
//! moved to the target by their cost-model bound, as the primitives are: their time × the
//! roofline time on the target over that on the source.

use super::roofs::Roofs;
use super::Family;
use profilednn_torchtrace::TorchJoin;
use std::collections::BTreeMap;

#[derive(Debug, Default)]
pub struct FrameworkPart {
    /// Costed framework ops outside oneDNN, per iteration.
    pub logged_ms: f64,
    pub projected_ms: f64,
    pub families: Vec<Family>,
    pub emulated: BTreeMap<String, f64>,
    pub stand_ins: Vec<String>,
}

/// Projects the costed framework ops of `j` (those that did not run in oneDNN: their
/// primitives are the log's) per iteration of the trace.
pub fn project(j: &TorchJoin, source: &Roofs, target: &Roofs) -> FrameworkPart {
    let per = j.iterations.unwrap_or(1).max(1) as f64;
    let mut part = FrameworkPart::default();
    let mut fam: BTreeMap<&str, Family> = BTreeMap::new();
    for r in j.framework.rows.iter().filter(|r| r.runs_in != "oneDNN") {
        if r.costed_calls == 0 {
            continue;
        }
        let share = r.costed_calls as f64 / r.calls.max(1) as f64;
        let ms = (r.time_ms - r.onednn_ms).max(0.0) * share / per;
        let precision = r.precision.as_deref().unwrap_or("f32");
        // No implementation name: on both machines the unit their libraries would use.
        let (Some(s), Some(t)) = (source.target(precision), target.target(precision)) else {
            continue;
        };
        let flops = r.flops.saturating_add(r.extra_flops);
        let (s_ms, _) = source.time_ms(&s, flops, r.bytes);
        let (t_ms, memory) = target.time_ms(&t, flops, r.bytes);
        if s_ms <= 0.0 {
            continue;
        }
        if t.emulated && !memory {
            *part.emulated.entry(precision.to_string()).or_default() += ms;
        }
        for why in [s.stand_in, t.stand_in].into_iter().flatten() {
            if !part.stand_ins.contains(&why) {
                part.stand_ins.push(why);
            }
        }
        let family = r.family.unwrap_or("other");
        let f = fam
            .entry(family)
            .or_insert_with(|| Family::new(r.runs_in, family));
        f.add(ms, ms * t_ms / s_ms, memory);
        part.logged_ms += ms;
        part.projected_ms += ms * t_ms / s_ms;
    }
    // torch.compile's kernels, costed from Inductor's code: the same rule, as a family of
    // their own (they run in place of the ops they fused).
    for k in j
        .framework
        .inductor_kernels
        .iter()
        .filter(|k| k.cost.is_some())
    {
        let ms = k.time_ms / per;
        let precision = k.precision.as_deref().unwrap_or("f32");
        let (Some(s), Some(t)) = (source.target(precision), target.target(precision)) else {
            continue;
        };
        let (s_ms, _) = source.time_ms(&s, k.flops, k.bytes);
        let (t_ms, memory) = target.time_ms(&t, k.flops, k.bytes);
        if s_ms <= 0.0 {
            continue;
        }
        let f = fam
            .entry("fused (Inductor)")
            .or_insert_with(|| Family::new("inductor", "fused (Inductor)"));
        f.add(ms, ms * t_ms / s_ms, memory);
        part.logged_ms += ms;
        part.projected_ms += ms * t_ms / s_ms;
    }
    part.families = fam.into_values().collect();
    part
}
