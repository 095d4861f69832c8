//! oneDNN busy time per time bin and primitive kind, from the log's timestamps: the timeline
//! view of the HTML report, small whatever the log's size.

use crate::events::{for_each_event, Event};
use crate::EventKind;
use profilednn_verbose::LogInput;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct TimeBins {
    /// Width of a bin, ms.
    pub bin_ms: f64,
    /// Kinds, in the order of each bin's values.
    pub kinds: Vec<String>,
    /// Busy ms per bin and kind (`bins[i][k]`).
    pub bins: Vec<Vec<f64>>,
    /// Iteration markers, ms from the start.
    pub markers_ms: Vec<f64>,
}

/// Bins the executions of `input` over `[first_ms, last_ms]` (epoch ms, from the profile).
/// An execution is credited to the bin of its start.
pub fn time_bins(input: LogInput, first_ms: f64, last_ms: f64, nbins: usize) -> TimeBins {
    let nbins = nbins.max(1);
    let span = (last_ms - first_ms).max(1e-9);
    let bin_ms = span / nbins as f64;
    let mut per_kind: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut markers_ms = Vec::new();
    let mut last_seen = first_ms;
    for_each_event(input, |e| match e {
        Event::Primitive(p) if p.kind == EventKind::Exec => {
            if let Some(ts) = p.timestamp_ms {
                last_seen = ts;
                let i = (((ts - first_ms) / bin_ms) as usize).min(nbins - 1);
                let v = per_kind
                    .entry(p.primitive.kind.to_string())
                    .or_insert_with(|| vec![0.0; nbins]);
                v[i] += p.time_ps.unwrap_or(0) as f64 / 1e9;
            }
        }
        Event::Iteration { .. } => markers_ms.push(last_seen - first_ms),
        _ => {}
    });
    let kinds: Vec<String> = per_kind.keys().cloned().collect();
    let bins = (0..nbins)
        .map(|i| per_kind.values().map(|v| v[i]).collect())
        .collect();
    TimeBins {
        bin_ms,
        kinds,
        bins,
        markers_ms,
    }
}
