//! Everything a report shows, computed once so that renderers only format.

use crate::breakdown::{breakdown, GroupKey};
use crate::efficiency::{efficiency, Efficiency};
use crate::iterations::Iterations;
use crate::metadata::RunMetadata;
use crate::profile::{LineCounts, MalformedLine, Profile};
use profilednn_machine::MachineProfile;
use serde::Serialize;

#[derive(Debug, Clone)]
pub struct SummaryOptions {
    /// Group-by keys chosen by the user; `None` gives the standard set of breakdowns.
    pub by: Option<Vec<GroupKey>>,
    /// Rows kept in the table of top unique primitives (and in `--by` tables for terminals).
    pub top: usize,
    /// Machine profile for the roofline efficiency section.
    pub machine: Option<MachineProfile>,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            by: None,
            top: 15,
            machine: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    /// Key name → value, in key order.
    pub values: Vec<String>,
    pub calls: u64,
    pub time_ms: f64,
    /// Fraction of the table's total time (0..1).
    pub share: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// Median and 90th percentile of the group's call times (identical calls in
    /// `top_primitives`), within 1/16 of the exact figure; `None` without a timed call. A p90
    /// many times the median, or a median many times `min_ms`, is a machine that was busy while
    /// recording (`timings-polluted`), not a property of the primitive.
    pub median_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    /// Time per iteration, when the iteration count is known.
    pub per_iteration_ms: Option<f64>,
    /// Calls per iteration, when the iteration count is known.
    pub calls_per_iteration: Option<f64>,
    pub primitives: usize,
    /// A reference (slow fallback) implementation is in this group.
    pub reference_impl: bool,
    /// With several logs: this group's time in each log, in source order.
    pub per_log_time_ms: Vec<f64>,
    /// Operations per call (mean over the group), `None` unless every call has a known cost.
    pub flops_per_call: Option<f64>,
    /// Minimum bytes per call, likewise.
    pub bytes_per_call: Option<f64>,
    /// Achieved GFLOP/s and GB/s over the calls with a known cost.
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct NamedBreakdown {
    /// Stable identifier: the key names joined by `,` (`prim_kind,prop_kind`), or
    /// `top_primitives` for the converter's full identity keys.
    pub name: String,
    pub title: String,
    pub keys: Vec<GroupKey>,
    /// Rows in the full table (`rows` may be cut to `top`).
    pub total_rows: usize,
    pub rows: Vec<SummaryRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LogTotals {
    pub source: String,
    pub total_time_ms: f64,
    pub calls: u64,
    /// This log's own iterations and oneDNN time per iteration.
    pub iterations: Option<Iterations>,
    pub per_iteration_time_ms: Option<f64>,
    pub lines: LineCounts,
    pub read_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub sources: Vec<String>,
    pub bytes: u64,
    pub total_time_ms: f64,
    pub calls: u64,
    pub create_time_ms: f64,
    pub create_calls: u64,
    pub lines: LineCounts,
    pub metadata: RunMetadata,
    /// Iterations of the (merged) view. With several logs: each log's iteration `i` summed,
    /// present only when every log has the same count (each log's own are in `per_log`).
    pub iterations: Option<Iterations>,
    /// oneDNN time per iteration; with several logs, all logs' time divided by the common
    /// iteration count (`per_iteration_logs` logs summed).
    pub per_iteration_time_ms: Option<f64>,
    /// Logs whose time `per_iteration_time_ms` sums (1 for one log).
    pub per_iteration_logs: usize,
    /// Wall-clock span between the first and last timestamped line, ms.
    pub wall_span_ms: Option<f64>,
    pub breakdowns: Vec<NamedBreakdown>,
    pub per_log: Vec<LogTotals>,
    pub malformed: Vec<MalformedLine>,
    pub diagnostics: Vec<(String, u64)>,
    pub diagnostic_examples: Vec<(u64, String, String)>,
    pub read_errors: Vec<String>,
    /// Roofline efficiency, when a machine profile was given.
    pub efficiency: Option<Efficiency>,
}

/// Standard breakdowns: the paper's views plus the converter's identity table.
pub fn default_breakdowns() -> Vec<(&'static str, &'static str, Vec<GroupKey>)> {
    use GroupKey::*;
    vec![
        ("prim_kind", "By primitive kind", vec![PrimKind]),
        ("prop_kind", "By propagation kind", vec![PropKind]),
        (
            "prim_kind,prop_kind",
            "By kind and propagation (the paper's donut view)",
            vec![PrimKind, PropKind],
        ),
        ("impl", "By implementation", vec![PrimKind, Impl]),
        ("dtype", "By data type", vec![Dtype]),
        (
            "top_primitives",
            "Top unique primitives",
            GroupKey::CONVERTER_DEFAULT.to_vec(),
        ),
    ]
}

/// The summary of logs that ran side by side (merges them; see [`summarize_merged`] to reuse a
/// merge the caller needs anyway).
pub fn summarize(profiles: &[Profile], opts: &SummaryOptions) -> Summary {
    summarize_merged(profiles, &Profile::merged(profiles), opts)
}

/// [`summarize`] over `merged`, which is [`Profile::merged`] of `profiles`.
pub fn summarize_merged(profiles: &[Profile], merged: &Profile, opts: &SummaryOptions) -> Summary {
    let iterations = merged.iterations.clone();
    let iters = iterations.as_ref().map(|i| i.count as f64);
    let total_ms = merged.exec_time_ms();
    let sets: Vec<(String, String, Vec<GroupKey>)> = match &opts.by {
        Some(keys) => {
            let name = keys.iter().map(|k| k.name()).collect::<Vec<_>>().join(",");
            vec![(
                name.clone(),
                format!("By {}", name.replace(',', ", ")),
                keys.clone(),
            )]
        }
        None => default_breakdowns()
            .into_iter()
            .map(|(n, t, k)| (n.to_string(), t.to_string(), k))
            .collect(),
    };
    let breakdowns = sets
        .into_iter()
        .map(|(name, title, keys)| {
            let b = breakdown(merged, &keys, true);
            let total_rows = b.rows.len();
            let limit = if name == "top_primitives" {
                opts.top
            } else {
                usize::MAX
            };
            let per_log =
                per_log_times(profiles, merged, &keys, &b.rows[..b.rows.len().min(limit)]);
            let rows = b
                .rows
                .iter()
                .take(limit)
                .enumerate()
                .map(|(i, r)| summary_row(r, b.share(r), iters, &per_log, i))
                .collect();
            NamedBreakdown {
                name,
                title,
                keys,
                total_rows,
                rows,
            }
        })
        .collect();
    let per_log = if profiles.len() > 1 {
        profiles
            .iter()
            .map(|p| LogTotals {
                source: p.sources.join(", "),
                total_time_ms: p.exec_time_ms(),
                calls: p.exec_calls(),
                iterations: p.iterations.clone(),
                per_iteration_time_ms: per_iteration(p.exec_time_ms(), p.iterations.as_ref()),
                lines: p.lines.clone(),
                read_error: p.read_error.clone(),
            })
            .collect()
    } else {
        vec![]
    };
    let create_calls = merged.lines.create;
    Summary {
        sources: merged.sources.clone(),
        bytes: merged.bytes,
        total_time_ms: total_ms,
        calls: merged.lines.exec,
        create_time_ms: merged.create_time_ps() as f64 / 1e9,
        create_calls,
        lines: merged.lines.clone(),
        metadata: merged.metadata.clone(),
        per_iteration_time_ms: per_iteration(total_ms, iterations.as_ref()),
        per_iteration_logs: profiles.len(),
        iterations,
        wall_span_ms: merged.timestamps.map(|(a, b)| b - a),
        breakdowns,
        per_log,
        malformed: merged.malformed.clone(),
        diagnostics: merged
            .diagnostics
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect(),
        diagnostic_examples: merged.diagnostic_examples.clone(),
        // Ranks of one log share its read error: said once.
        read_errors: profiles.iter().fold(Vec::new(), |mut v, p| {
            if let Some(e) = &p.read_error {
                if !v.contains(e) {
                    v.push(e.clone());
                }
            }
            v
        }),
        efficiency: opts
            .machine
            .as_ref()
            .map(|m| efficiency(merged, m, opts.top)),
    }
}

/// Row `i` of a breakdown (`r`, its `share` of the time): per call, per iteration (`iters`)
/// and per log (`per_log`, ps by log then row).
fn summary_row(
    r: &crate::breakdown::BreakdownRow,
    share: f64,
    iters: Option<f64>,
    per_log: &[Vec<u128>],
    i: usize,
) -> SummaryRow {
    SummaryRow {
        values: r.values.clone(),
        calls: r.calls,
        time_ms: r.time_ms(),
        share,
        mean_ms: r.mean_ms(),
        min_ms: if r.min_ps == u64::MAX {
            0.0
        } else {
            r.min_ps as f64 / 1e9
        },
        max_ms: r.max_ps as f64 / 1e9,
        median_ms: r.durations.quantile_ms(0.5),
        p90_ms: r.durations.quantile_ms(0.9),
        per_iteration_ms: iters.map(|n| r.time_ms() / n),
        calls_per_iteration: iters.map(|n| r.calls as f64 / n),
        primitives: r.primitives,
        reference_impl: r.reference_impl,
        per_log_time_ms: per_log.iter().map(|t| t[i] as f64 / 1e9).collect(),
        flops_per_call: (r.work.calls == r.calls && r.calls > 0)
            .then(|| r.work.flops as f64 / r.calls as f64),
        bytes_per_call: (r.work.calls == r.calls && r.calls > 0)
            .then(|| r.work.bytes as f64 / r.calls as f64),
        gflops: r.work.gflops(),
        gbps: r.work.gbps(),
    }
}

/// With several logs, each log's execution time (ps) in each of `rows` (a breakdown of
/// `merged` by `keys`): `[log][row]`; nothing for one log. A group's values are a function of
/// the primitive, so they are computed once per distinct primitive of the merged view, not
/// once per primitive of each log: at 1,024 ranks, a breakdown of every rank cost more than
/// reading the log.
fn per_log_times(
    profiles: &[Profile],
    merged: &Profile,
    keys: &[GroupKey],
    rows: &[crate::breakdown::BreakdownRow],
) -> Vec<Vec<u128>> {
    use crate::profile::EventKind;
    use foldhash::HashMap;
    use std::sync::Arc;
    if profiles.len() < 2 {
        return Vec::new();
    }
    let row_of: HashMap<&[String], usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (&r.values[..], i))
        .collect();
    let row_of_primitive: HashMap<&profilednn_model::Primitive, usize> = merged
        .entries
        .iter()
        .filter(|e| e.event == EventKind::Exec)
        .filter_map(|e| {
            let values: Vec<String> = keys.iter().map(|k| k.value(e)).collect();
            row_of.get(&values[..]).map(|&i| (&*e.primitive, i))
        })
        .collect();
    // The ranks of a labelled log share their parsed primitives (Profile::from_tally_cached):
    // the same allocation is the same primitive, found without hashing and comparing a whole
    // primitive (which cost as much as reading a 64-rank log's lines). Another allocation
    // (profiles parsed apart) is looked up by value.
    let row_of_allocation: HashMap<usize, usize> = merged
        .entries
        .iter()
        .filter(|e| e.event == EventKind::Exec)
        .filter_map(|e| {
            row_of_primitive
                .get(&*e.primitive)
                .map(|&i| (Arc::as_ptr(&e.primitive) as usize, i))
        })
        .collect();
    profiles
        .iter()
        .map(|p| {
            let mut t = vec![0u128; rows.len()];
            for e in p.entries.iter().filter(|e| e.event == EventKind::Exec) {
                let row = match row_of_allocation.get(&(Arc::as_ptr(&e.primitive) as usize)) {
                    Some(&i) => Some(i),
                    None => row_of_primitive.get(&*e.primitive).copied(),
                };
                if let Some(i) = row {
                    t[i] = t[i].saturating_add(e.time_ps);
                }
            }
            t
        })
        .collect()
}

/// oneDNN time per whole iteration (a partial last iteration left out).
fn per_iteration(total_ms: f64, it: Option<&Iterations>) -> Option<f64> {
    it.and_then(|i| i.mean_ms(total_ms))
}
