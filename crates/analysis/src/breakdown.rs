//! Grouping a profile's time by any combination of keys.

use crate::durations::Durations;
use crate::profile::{Entry, EventKind, Profile};
use foldhash::HashMap;
use serde::Serialize;
use std::fmt;

/// A grouping key. The names are verbose_converter's (`-k`), plus `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKey {
    Engine,
    PrimKind,
    Impl,
    PropKind,
    Mds,
    Exts,
    Aux,
    Shapes,
    Dtype,
}

/// A `--by` key that is none of [`GroupKey`]'s names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown key '{0}': expected one of engine, prim_kind, impl, prop_kind, mds, exts, aux, shapes, dtype"
)]
pub struct UnknownGroupKey(pub String);

impl std::str::FromStr for GroupKey {
    type Err = UnknownGroupKey;

    /// verbose_converter's names, plus a few spellings people type (`kind`, `direction`, …).
    fn from_str(s: &str) -> Result<GroupKey, UnknownGroupKey> {
        Ok(match s {
            "engine" => GroupKey::Engine,
            "prim_kind" | "kind" | "primitive" => GroupKey::PrimKind,
            "impl" | "implementation" => GroupKey::Impl,
            "prop_kind" | "prop" | "direction" => GroupKey::PropKind,
            "mds" => GroupKey::Mds,
            "exts" | "attrs" | "attributes" => GroupKey::Exts,
            "aux" => GroupKey::Aux,
            "shapes" | "problem" | "shape" => GroupKey::Shapes,
            "dtype" | "data_type" => GroupKey::Dtype,
            other => return Err(UnknownGroupKey(other.to_string())),
        })
    }
}

impl GroupKey {
    pub const CONVERTER_DEFAULT: [GroupKey; 8] = [
        GroupKey::Engine,
        GroupKey::PrimKind,
        GroupKey::Impl,
        GroupKey::PropKind,
        GroupKey::Mds,
        GroupKey::Exts,
        GroupKey::Aux,
        GroupKey::Shapes,
    ];

    pub fn name(self) -> &'static str {
        match self {
            GroupKey::Engine => "engine",
            GroupKey::PrimKind => "prim_kind",
            GroupKey::Impl => "impl",
            GroupKey::PropKind => "prop_kind",
            GroupKey::Mds => "mds",
            GroupKey::Exts => "exts",
            GroupKey::Aux => "aux",
            GroupKey::Shapes => "shapes",
            GroupKey::Dtype => "dtype",
        }
    }

    pub fn value(self, e: &Entry) -> String {
        let p = &e.primitive;
        match self {
            GroupKey::Engine => p.engine.to_string(),
            GroupKey::PrimKind => p.kind.to_string(),
            GroupKey::Impl => p.implementation.clone(),
            GroupKey::PropKind => p.prop_kind.to_string(),
            GroupKey::Mds => p.mds_string(),
            GroupKey::Exts => p.exts_string(),
            GroupKey::Aux => p.aux_string(),
            GroupKey::Shapes => p.problem.clone(),
            GroupKey::Dtype => p.dtype_summary(),
        }
    }
}

impl fmt::Display for GroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct BreakdownRow {
    /// One value per key, in key order.
    pub values: Vec<String>,
    pub calls: u64,
    pub time_ps: u128,
    pub min_ps: u64,
    pub max_ps: u64,
    /// The group's calls' times (median, p90).
    #[serde(skip)]
    pub durations: Durations,
    /// Distinct primitives in the group.
    pub primitives: usize,
    /// Some primitive in the group runs a reference (slow fallback) implementation.
    pub reference_impl: bool,
    /// Work of the calls whose cost is known.
    pub work: Work,
}

/// Operations and bytes summed over calls, for the calls whose cost the model knows.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Work {
    pub flops: u128,
    pub extra_flops: u128,
    pub bytes: u128,
    pub calls: u64,
    pub time_ps: u128,
}

impl Work {
    pub fn add(&mut self, e: &Entry) {
        if let Ok(c) = &e.cost {
            // u64 x u64 fits 128 bits; the sums saturate rather than wrap.
            let per_calls = |x: u64| x as u128 * e.calls as u128;
            self.flops = self.flops.saturating_add(per_calls(c.flops));
            self.extra_flops = self.extra_flops.saturating_add(per_calls(c.extra_flops));
            self.bytes = self.bytes.saturating_add(per_calls(c.bytes));
            self.calls = self.calls.saturating_add(e.calls);
            self.time_ps = self.time_ps.saturating_add(e.time_ps);
        }
    }
    /// Achieved GFLOP/s over the costed calls (`None` without any).
    pub fn gflops(&self) -> Option<f64> {
        (self.time_ps > 0).then(|| self.flops as f64 / (self.time_ps as f64 / 1e12) / 1e9)
    }
    pub fn gbps(&self) -> Option<f64> {
        (self.time_ps > 0).then(|| self.bytes as f64 / (self.time_ps as f64 / 1e12) / 1e9)
    }
}

impl BreakdownRow {
    pub fn time_ms(&self) -> f64 {
        self.time_ps as f64 / 1e9
    }
    pub fn mean_ms(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.time_ms() / self.calls as f64
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub keys: Vec<GroupKey>,
    pub event: String,
    pub total_ps: u128,
    pub total_calls: u64,
    /// Sorted by time, largest first (ties: more calls first, then by key values).
    pub rows: Vec<BreakdownRow>,
}

impl Breakdown {
    pub fn share(&self, row: &BreakdownRow) -> f64 {
        if self.total_ps == 0 {
            0.0
        } else {
            row.time_ps as f64 / self.total_ps as f64
        }
    }
}

/// Groups the entries of one event kind (`exec` or creations) by `keys`.
pub fn breakdown(profile: &Profile, keys: &[GroupKey], exec: bool) -> Breakdown {
    let mut groups: HashMap<Vec<String>, BreakdownRow> = HashMap::default();
    let mut total_ps = 0u128;
    let mut total_calls = 0u64;
    for e in profile
        .entries
        .iter()
        .filter(|e| (e.event == EventKind::Exec) == exec)
    {
        let values: Vec<String> = keys.iter().map(|k| k.value(e)).collect();
        total_ps = total_ps.saturating_add(e.time_ps);
        total_calls = total_calls.saturating_add(e.calls);
        let row = groups
            .entry(values.clone())
            .or_insert_with(|| BreakdownRow {
                values,
                calls: 0,
                time_ps: 0,
                min_ps: u64::MAX,
                max_ps: 0,
                durations: Durations::default(),
                primitives: 0,
                reference_impl: false,
                work: Work::default(),
            });
        row.calls = row.calls.saturating_add(e.calls);
        row.time_ps = row.time_ps.saturating_add(e.time_ps);
        row.min_ps = row.min_ps.min(e.min_ps);
        row.max_ps = row.max_ps.max(e.max_ps);
        row.durations.merge(&e.durations);
        row.primitives += 1;
        row.reference_impl |= e.primitive.is_reference_impl();
        row.work.add(e);
    }
    let mut rows: Vec<BreakdownRow> = groups.into_values().collect();
    rows.sort_by(|a, b| {
        b.time_ps
            .cmp(&a.time_ps)
            .then(b.calls.cmp(&a.calls))
            .then_with(|| a.values.cmp(&b.values))
    });
    Breakdown {
        keys: keys.to_vec(),
        event: if exec { "exec".into() } else { "create".into() },
        total_ps,
        total_calls,
        rows,
    }
}
