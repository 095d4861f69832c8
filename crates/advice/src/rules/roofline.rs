//! `low-roofline-efficiency`: the heaviest primitives far from what the machine can do.

use super::*;

pub const ID: &str = "low-roofline-efficiency";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let Some(eff) = &ev.summary.efficiency else {
        return Err(
            "no machine profile (run `profilednn peak` or pass --machine FILE) (not applicable)"
                .into(),
        );
    };
    if eff.lost_ms.is_none() {
        // A time lost against a roof that is too low would be wrong: no gain is claimed.
        return Err(format!(
            "the roofs are suspect ({}): no time lost is claimed against them (not applicable)",
            eff.suspect.first().map_or("", String::as_str)
        ));
    }
    let total = ev.summary.total_time_ms;
    let slow: Vec<_> = eff
        .primitives
        .iter()
        .filter(|r| r.efficiency < t.roofline_efficiency)
        .collect();
    let lost: f64 = slow.iter().fold(0.0, |a, r| a + r.lost_ms.unwrap_or(0.0));
    let share = if total > 0.0 { lost / total } else { 0.0 };
    if slow.is_empty() || share < t.roofline_lost_share {
        return Err(format!(
            "primitives below {} of their roofline lose {} of oneDNN time (threshold {})",
            pct(t.roofline_efficiency),
            pct(share),
            pct(t.roofline_lost_share)
        ));
    }
    let compute_bound = slow
        .iter()
        .filter(|r| matches!(r.bound, profilednn_analysis::efficiency::Bound::Compute))
        .count();
    let rows: Vec<Value> = slow
        .iter()
        .take(5)
        .map(|r| {
            json!({
                "primitive": format!("{} {} {} {}", r.prim_kind, r.prop_kind, r.implementation, r.shapes),
                "precision": r.precision,
                "reached": r.efficiency,
                "bound": r.bound,
                "lost_ms": r.lost_ms,
            })
        })
        .collect();
    Ok(finding(
        ev,
        ID,
        format!(
            "{} primitive(s) reach less than {} of their roofline on {} and lose {lost:.1} ms ({})",
            slow.len(),
            pct(t.roofline_efficiency),
            eff.machine,
            pct(share)
        ),
        map(vec![
            ("lost_ms", json!(lost)),
            ("share", json!(share)),
            ("machine", json!(eff.machine)),
            ("compute_bound", json!(compute_bound)),
            ("memory_bound", json!(slow.len() - compute_bound)),
            ("heaviest", Value::Array(rows)),
        ]),
        Some(lost),
        "time lost against the roofline (measured minus the roofline's time)",
        "For compute-bound primitives, check the implementation name: a jit:avx2 or gemm kernel \
         on an AVX-512/AMX machine means a layout or data type kept the best kernel away \
         (channels-last, or bf16 where `profilednn peak` measures it faster than f32); small problems cannot fill all cores \
         (larger batch). For memory-bound ones, fuse them with their neighbours (post-ops) so \
         their data is not re-read from memory.",
    ))
}
