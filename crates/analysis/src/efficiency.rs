//! How far each primitive is from the machine's roofline, and where that costs the most time.
//!
//! For every unique primitive executed: the work and traffic of its calls (cost model), the
//! time the roofline allows (`max(flops / peak, bytes / bandwidth)` per call, at the peak of
//! its arithmetic precision), and the *time lost* against that bound — the ranking that says
//! where optimisation pays. Caveat stated in the output: the memory roof is DRAM bandwidth, so
//! a primitive whose tensors stay in cache can beat it (efficiency above 100 %).

use crate::profile::{Entry, EventKind, Profile};
pub use profilednn_machine::Bound;
use profilednn_machine::MachineProfile;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct EfficiencyRow {
    pub prim_kind: String,
    pub prop_kind: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    pub shapes: String,
    pub precision: String,
    /// The precision whose peak bounds this row (`f32` for bf16 on a CPU without bf16 units).
    pub peak_precision: String,
    /// The unit whose roof bounds it (`amx`, `avx512_bf16`, `avx512`, …), when the
    /// implementation's name says and the profile measured that unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_unit: Option<String>,
    pub calls: u64,
    pub time_ms: f64,
    pub flops_per_call: u64,
    pub extra_flops_per_call: u64,
    pub bytes_per_call: u64,
    /// Achieved GFLOP/s (benchdnn's flops over measured time).
    pub gflops: f64,
    pub gbps: f64,
    /// flops per byte.
    pub intensity: f64,
    pub attainable_gflops: f64,
    pub bound: Bound,
    /// The roofline's time for all calls, ms.
    pub roofline_ms: f64,
    /// `roofline_ms / time_ms` (share of the bound reached).
    pub efficiency: f64,
    /// `time_ms − roofline_ms`, at least 0; `None` when the roofs are suspect
    /// ([`Efficiency::suspect`]): time "lost" against a roof that is too low is not lost.
    pub lost_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EfficiencyGroup {
    pub prim_kind: String,
    pub prop_kind: String,
    pub primitives: usize,
    pub time_ms: f64,
    pub roofline_ms: f64,
    pub efficiency: f64,
    /// `None` when the roofs are suspect, as for the rows.
    pub lost_ms: Option<f64>,
    pub gflops: f64,
    pub gbps: f64,
}

/// Time whose cost is unknown, by reason.
#[derive(Debug, Clone, Serialize)]
pub struct UncostedTime {
    pub prim_kind: String,
    pub reason: String,
    pub primitives: usize,
    pub time_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Efficiency {
    pub machine: String,
    pub peak_gflops: BTreeMap<String, f64>,
    /// The profile's peak per precision and unit (`bf16 → amx → GFLOP/s`): a primitive is set
    /// against the unit its implementation names. Empty for a spec sheet without units.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unit_gflops: BTreeMap<String, BTreeMap<String, f64>>,
    pub memory_gbps: f64,
    /// Measured oneDNN time of the primitives that have a roofline, ms.
    pub measured_ms: f64,
    /// Sum of their roofline times, ms.
    pub roofline_ms: f64,
    /// The run-level ratio `roofline_ms / measured_ms` (the paper's efficiency).
    pub ratio: f64,
    /// Share of all oneDNN time covered by the ratio.
    pub coverage: f64,
    /// Time lost against the roofline, ms; `None` when the roofs are suspect: a figure built
    /// on a roof that is too low would point at the wrong primitives.
    pub lost_ms: Option<f64>,
    /// Unique primitives, most time lost first (cut to `top`).
    pub primitives: Vec<EfficiencyRow>,
    pub total_primitives: usize,
    /// By kind and propagation, most time lost first.
    pub groups: Vec<EfficiencyGroup>,
    pub uncosted: Vec<UncostedTime>,
    /// Where a precision was bounded by another precision's peak, and why (one line each).
    pub substitutions: Vec<String>,
    /// How the roofs were fitted to the log's thread count (or why they were not).
    pub scaling: Option<String>,
    /// Which machine the log ran on against the profile's, when the log names its ISA
    /// ([`crate::log_machine::note`]).
    pub log_machine: Option<String>,
    /// Why the efficiencies cannot be trusted: compute-bound primitives above 100 % of the
    /// roof (impossible against a true peak), a machine profile that looks wrong.
    pub suspect: Vec<String>,
    pub caveat: &'static str,
}

const CAVEAT: &str = "memory roof = DRAM bandwidth: primitives whose tensors stay in cache can exceed it (efficiency > 100%); flops follow benchdnn (bias and post-ops excluded from GFLOP/s, included in the roofline time)";

fn row(
    e: &Entry,
    m: &MachineProfile,
    substitutions: &mut Vec<String>,
) -> Result<EfficiencyRow, String> {
    let c = e.cost.as_ref().map_err(|u| u.reason.clone())?;
    let precision = c.precision.as_str();
    // The reason is a key of the uncosted table, so both kinds of reason become its text here.
    // The roof of the unit the implementation ran on: `…_amx` against AMX, not the
    // precision's slower dot-product peak (issue 52).
    let peak = m
        .peak_choice_for(precision, Some(e.primitive.implementation.as_str()))
        .map_err(|e| e.to_string())?;
    if let Some(why) = peak.substitution {
        if !substitutions.contains(&why) {
            substitutions.push(why);
        }
    }
    let r = m.roofline_at(peak.gflops, c.flops.saturating_add(c.extra_flops), c.bytes);
    let p = &e.primitive;
    let time_ms = e.time_ms();
    let secs = time_ms / 1e3;
    let roofline_ms = r.min_seconds * e.calls as f64 * 1e3;
    let total_flops = c.flops as f64 * e.calls as f64;
    let total_bytes = c.bytes as f64 * e.calls as f64;
    Ok(EfficiencyRow {
        prim_kind: p.kind.to_string(),
        prop_kind: p.prop_kind.to_string(),
        implementation: p.implementation.clone(),
        shapes: p.problem.clone(),
        precision: precision.to_string(),
        peak_precision: peak.peak_precision,
        peak_unit: peak.unit,
        calls: e.calls,
        time_ms,
        flops_per_call: c.flops,
        extra_flops_per_call: c.extra_flops,
        bytes_per_call: c.bytes,
        gflops: if secs > 0.0 {
            total_flops / secs / 1e9
        } else {
            0.0
        },
        gbps: if secs > 0.0 {
            total_bytes / secs / 1e9
        } else {
            0.0
        },
        intensity: c.intensity(),
        attainable_gflops: r.attainable_gflops,
        bound: r.bound,
        roofline_ms,
        efficiency: if time_ms > 0.0 {
            roofline_ms / time_ms
        } else {
            0.0
        },
        lost_ms: Some((time_ms - roofline_ms).max(0.0)),
    })
}

pub fn efficiency(profile: &Profile, machine: &MachineProfile, top: usize) -> Efficiency {
    // The roof of the threads the log ran with, not of the whole machine.
    let (scaled, scaling) = scaled_to_log(profile, machine);
    let machine = scaled.as_ref().unwrap_or(machine);
    let mut rows = Vec::new();
    let mut uncosted: BTreeMap<(String, String), (usize, f64)> = BTreeMap::new();
    let mut total_ms = 0.0;
    let mut substitutions = Vec::new();
    for e in profile
        .entries
        .iter()
        .filter(|e| e.event == EventKind::Exec)
    {
        total_ms += e.time_ms();
        match row(e, machine, &mut substitutions) {
            Ok(r) => rows.push(r),
            Err(reason) => {
                let u = uncosted
                    .entry((e.primitive.kind.to_string(), reason))
                    .or_default();
                u.0 += 1;
                u.1 += e.time_ms();
            }
        }
    }
    let groups = groups_of(&rows);
    // Folded from +0.0: `Sum` of no f64 is −0.0, which printed as "-0.000 ms".
    let measured_ms = rows.iter().fold(0.0, |a, r| a + r.time_ms);
    let roofline_ms = rows.iter().fold(0.0, |a, r| a + r.roofline_ms);
    let lost_ms = rows.iter().fold(0.0, |a, r| a + lost(r.lost_ms));
    rows.sort_by(|a, b| {
        lost(b.lost_ms)
            .total_cmp(&lost(a.lost_ms))
            .then(b.time_ms.total_cmp(&a.time_ms))
    });
    let total_primitives = rows.len();
    let suspect = suspicions(&rows, machine, measured_ms, roofline_ms);
    rows.truncate(top);
    let mut groups = groups;
    let lost_ms = if suspect.is_empty() {
        Some(lost_ms)
    } else {
        withhold_lost(&mut rows, &mut groups);
        None
    };
    let mut uncosted: Vec<UncostedTime> = uncosted
        .into_iter()
        .map(
            |((prim_kind, reason), (primitives, time_ms))| UncostedTime {
                prim_kind,
                reason,
                primitives,
                time_ms,
            },
        )
        .collect();
    uncosted.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    Efficiency {
        machine: machine.name.clone(),
        peak_gflops: machine.peak_gflops.clone(),
        unit_gflops: machine.unit_table(),
        memory_gbps: machine.memory_gbps,
        measured_ms,
        roofline_ms,
        ratio: if measured_ms > 0.0 {
            roofline_ms / measured_ms
        } else {
            0.0
        },
        coverage: if total_ms > 0.0 {
            measured_ms / total_ms
        } else {
            0.0
        },
        lost_ms,
        primitives: rows,
        total_primitives,
        groups,
        uncosted,
        substitutions,
        scaling,
        log_machine: crate::log_machine::note(&profile.metadata, machine),
        suspect,
        caveat: CAVEAT,
    }
}

fn lost(v: Option<f64>) -> f64 {
    v.unwrap_or(0.0)
}

/// Drops every time lost: the roofs they were measured against are suspect. The order (most
/// time lost first) stays, as the only ranking there is, and the output says what it rests on.
fn withhold_lost(rows: &mut [EfficiencyRow], groups: &mut [EfficiencyGroup]) {
    rows.iter_mut().for_each(|r| r.lost_ms = None);
    groups.iter_mut().for_each(|g| g.lost_ms = None);
}

/// The machine scaled to the log's thread count (`None`: as given), and what was done.
fn scaled_to_log(
    profile: &Profile,
    machine: &MachineProfile,
) -> (Option<MachineProfile>, Option<String>) {
    let nthr = profile.metadata.threads.map(|t| t as usize);
    match (nthr, machine.threads) {
        (Some(n), Some(_)) => match machine.scaled_to_threads(n) {
            Some((m, note)) => (Some(m), Some(note)),
            None => (None, None),
        },
        (Some(n), None) => (
            None,
            Some(format!(
                "NOT scaled: the log ran with {n} threads (nthr:{n}) but the machine profile does \
                 not say how many threads its peaks used; the roofs are the profile's as given \
                 (for a whole machine, efficiencies come out too low)"
            )),
        ),
        (None, Some(all)) if all > 1 => (
            None,
            Some(format!(
                "not scaled: the log has no thread count (nthr); the roofs are for all {all} \
                 threads of the profile"
            )),
        ),
        _ => (None, None),
    }
}

/// The rows summed by kind and direction, their rates per second; most time lost first.
fn groups_of(rows: &[EfficiencyRow]) -> Vec<EfficiencyGroup> {
    let mut groups: BTreeMap<(String, String), EfficiencyGroup> = BTreeMap::new();
    for r in rows {
        let g = groups
            .entry((r.prim_kind.clone(), r.prop_kind.clone()))
            .or_insert_with(|| EfficiencyGroup {
                prim_kind: r.prim_kind.clone(),
                prop_kind: r.prop_kind.clone(),
                primitives: 0,
                time_ms: 0.0,
                roofline_ms: 0.0,
                efficiency: 0.0,
                lost_ms: Some(0.0),
                gflops: 0.0,
                gbps: 0.0,
            });
        g.primitives += 1;
        g.time_ms += r.time_ms;
        g.roofline_ms += r.roofline_ms;
        g.lost_ms = Some(lost(g.lost_ms) + lost(r.lost_ms));
        // Accumulate totals in the rate fields, turned into rates below.
        g.gflops += r.flops_per_call as f64 * r.calls as f64;
        g.gbps += r.bytes_per_call as f64 * r.calls as f64;
    }
    let mut groups: Vec<EfficiencyGroup> = groups
        .into_values()
        .map(|mut g| {
            let secs = g.time_ms / 1e3;
            g.efficiency = if g.time_ms > 0.0 {
                g.roofline_ms / g.time_ms
            } else {
                0.0
            };
            g.gflops = if secs > 0.0 {
                g.gflops / secs / 1e9
            } else {
                0.0
            };
            g.gbps = if secs > 0.0 { g.gbps / secs / 1e9 } else { 0.0 };
            g
        })
        .collect();
    groups.sort_by(|a, b| lost(b.lost_ms).total_cmp(&lost(a.lost_ms)));
    groups
}

/// Efficiencies that cannot be: compute-bound primitives above 100 % of their roof, a
/// run-level ratio above 100 %, and what looks wrong in the machine profile itself.
fn suspicions(
    rows: &[EfficiencyRow],
    machine: &MachineProfile,
    measured_ms: f64,
    roofline_ms: f64,
) -> Vec<String> {
    let mut out = Vec::new();
    let over: Vec<&EfficiencyRow> = rows
        .iter()
        .filter(|r| r.bound == Bound::Compute && r.efficiency > 1.0)
        .collect();
    if let Some(worst) = over
        .iter()
        .max_by(|a, b| a.efficiency.total_cmp(&b.efficiency))
    {
        out.push(format!(
            "{} compute-bound primitive(s) above 100% of the roofline (up to {:.1}%: {} {} {}, \
             {:.1} GFLOP/s against a {} roof of {:.1} GFLOP/s): impossible against a true \
             peak — the roof is too low (a peak measured at a lower frequency or on a busy \
             machine, or for fewer threads than the log used)",
            over.len(),
            worst.efficiency * 100.0,
            worst.prim_kind,
            worst.prop_kind,
            worst.shapes,
            worst.gflops,
            worst.peak_precision,
            worst.attainable_gflops,
        ));
    }
    if measured_ms > 0.0 && roofline_ms > measured_ms {
        out.push(format!(
            "the run reaches {:.1}% of the roofline overall: above 100% the roofs are wrong",
            roofline_ms / measured_ms * 100.0
        ));
    }
    out.extend(machine.suspicions());
    out
}
