//! The rules, one module each. A rule returns its finding, or why it did not fire.

mod backward_weights;
mod bf16;
mod bf16_emulated;
mod cache;
mod compile_breaks;
mod compile_cost;
mod compile_vs_eager;
mod framework_ops;
mod fusion;
mod launch;
mod outside;
pub(crate) mod polluted;
mod projected;
mod rank_imbalance;
mod rank_placement;
mod reference_impl;
mod reorder;
mod roofline;
mod threads;
mod tiny;
mod torch_view;
mod whole_step;

use crate::{Evidence, Finding, Thresholds};
use profilednn_analysis::{Entry, EventKind};
use serde_json::{json, Map, Value};

pub struct Rule {
    pub id: &'static str,
    pub check: fn(&Evidence, &Thresholds) -> Result<Finding, String>,
}

pub const ALL: &[Rule] = &[
    Rule {
        id: reorder::ID,
        check: reorder::check,
    },
    Rule {
        id: reference_impl::ID,
        check: reference_impl::check,
    },
    Rule {
        id: bf16::ID,
        check: bf16::check,
    },
    Rule {
        id: bf16_emulated::ID,
        check: bf16_emulated::check,
    },
    Rule {
        id: fusion::ID,
        check: fusion::check,
    },
    Rule {
        id: backward_weights::ID,
        check: backward_weights::check,
    },
    Rule {
        id: tiny::ID,
        check: tiny::check,
    },
    Rule {
        id: outside::ID,
        check: outside::check,
    },
    Rule {
        id: cache::ID,
        check: cache::check,
    },
    Rule {
        id: threads::ID,
        check: threads::check,
    },
    Rule {
        id: roofline::ID,
        check: roofline::check,
    },
    Rule {
        id: torch_view::LOSS,
        check: torch_view::loss,
    },
    Rule {
        id: torch_view::NORM,
        check: torch_view::normalization,
    },
    Rule {
        id: torch_view::OPTIMIZER,
        check: torch_view::optimizer,
    },
    Rule {
        id: torch_view::DATA,
        check: torch_view::data,
    },
    Rule {
        id: rank_imbalance::ID,
        check: rank_imbalance::check,
    },
    Rule {
        id: rank_placement::ID,
        check: rank_placement::check,
    },
    Rule {
        id: launch::ID,
        check: launch::check,
    },
    Rule {
        id: polluted::ID,
        check: polluted::check,
    },
    Rule {
        id: whole_step::ID,
        check: whole_step::check,
    },
    Rule {
        id: compile_cost::ID,
        check: compile_cost::check,
    },
    Rule {
        id: compile_vs_eager::ID,
        check: compile_vs_eager::check,
    },
    Rule {
        id: compile_breaks::ID,
        check: compile_breaks::check,
    },
    Rule {
        id: framework_ops::GEMM,
        check: framework_ops::gemm,
    },
    Rule {
        id: framework_ops::ATTENTION,
        check: framework_ops::attention,
    },
    Rule {
        id: framework_ops::ELEMENTWISE,
        check: framework_ops::elementwise,
    },
];

/// The what-ifs the projection-aware rules would use here (see [`crate::wanted_what_ifs`]).
pub fn wanted(ev: &Evidence, t: &Thresholds) -> Vec<crate::WantedWhatIf> {
    [bf16::wanted(ev, t), reorder::wanted(ev, t)]
        .into_iter()
        .flatten()
        .collect()
}

pub fn exec<'a>(ev: &'a Evidence) -> impl Iterator<Item = &'a Entry> + 'a {
    ev.profile
        .entries
        .iter()
        .filter(|e| e.event == EventKind::Exec)
}

pub fn total_ms(ev: &Evidence) -> f64 {
    ms_sum(exec(ev))
}

/// Summed time of entries (from +0.0: an empty sum is 0, not −0).
pub fn ms_sum<'a>(entries: impl Iterator<Item = &'a Entry>) -> f64 {
    entries.fold(0.0, |a, e| a + e.time_ms())
}

/// Time of `entries` and its share of `total`.
pub fn time_share(total: f64, entries: &[&Entry]) -> (f64, f64) {
    let time = ms_sum(entries.iter().copied());
    (time, if total > 0.0 { time / total } else { 0.0 })
}

pub fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0 + 0.0)
}

/// A primitive as one line: `kind prop impl shapes`.
pub fn describe(e: &Entry) -> String {
    let p = &e.primitive;
    format!(
        "{} {} {} {}",
        p.kind, p.prop_kind, p.implementation, p.problem
    )
}

/// The layouts of a primitive's tensors, `src:f32:abcd → dst:f32:Acdb16a` (absent ones left out).
pub fn layouts(e: &Entry) -> String {
    e.primitive
        .mds
        .iter()
        .filter(|m| !m.is_absent())
        .map(|m| format!("{}:{}:{}", m.arg, m.data_type, m.tag))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The heaviest `n` entries as evidence rows. Rows that would read the same (entries that
/// differ only in their tensors' layouts, such as reorders) carry their layouts.
pub fn examples<'a>(entries: impl Iterator<Item = &'a Entry>, n: usize) -> Value {
    let mut v: Vec<&Entry> = entries.collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.time_ps));
    v.truncate(n);
    let names: Vec<String> = v.iter().map(|e| describe(e)).collect();
    Value::Array(
        v.into_iter()
            .zip(&names)
            .map(|(e, name)| {
                let same = names.iter().filter(|x| *x == name).count() > 1;
                json!({
                    "primitive": if same {
                        format!("{name} [{}]", layouts(e))
                    } else {
                        name.clone()
                    },
                    "dtype": e.primitive.dtype_summary(),
                    "calls": e.calls,
                    "time_ms": e.time_ms(),
                })
            })
            .collect(),
    )
}

/// Builds a finding; the per-iteration gain follows from the iteration count.
#[allow(clippy::too_many_arguments)]
pub fn finding(
    ev: &Evidence,
    id: &'static str,
    title: String,
    evidence: Map<String, Value>,
    gain_ms: Option<f64>,
    gain_basis: &str,
    action: &str,
) -> Finding {
    let iters = ev.summary.iterations.as_ref().map(|i| i.count as f64);
    Finding {
        id,
        title,
        evidence,
        gain_ms,
        gain_ms_per_iteration: match (gain_ms, iters) {
            (Some(g), Some(n)) if n > 0.0 => Some(g / n),
            _ => None,
        },
        gain_basis: gain_basis.to_string(),
        action: action.to_string(),
        projection: None,
        not_recommended: None,
        step_share: None,
    }
}

/// Iterations of the log, else of the trace: what a per-iteration figure of the trace is
/// multiplied by to be a total over the log, as every finding's `gain_ms` is.
pub(crate) fn log_iterations(ev: &Evidence) -> f64 {
    ev.summary
        .iterations
        .as_ref()
        .map(|i| i.count)
        .or(ev.torch.and_then(|j| j.iterations))
        .map_or(1.0, |n| n.max(1) as f64)
}

/// A finding measured on the PyTorch trace: `trace_gain_ms` is over the trace's iterations and
/// `share` of its step. Its per-iteration gain divides by the trace's own count
/// (`TorchJoin::iterations`), never the log's: a log of 6 iterations with a trace of 5 once
/// read "46.2 ms (7.7 ms per iteration)" for 9.2. The total is that over the log's iterations
/// (as the other findings' totals are, which it ranks with), and the share of the step is the
/// one the title states, so the finding shows one share, not two.
#[allow(clippy::too_many_arguments)]
pub fn trace_finding(
    ev: &Evidence,
    id: &'static str,
    title: String,
    evidence: Map<String, Value>,
    trace_gain_ms: Option<f64>,
    share: f64,
    gain_basis: &str,
    action: &str,
) -> Finding {
    let mut f = finding(ev, id, title, evidence, None, gain_basis, action);
    match ev.torch.and_then(|j| j.iterations).filter(|n| *n > 0) {
        Some(n) => {
            f.gain_ms_per_iteration = trace_gain_ms.map(|g| g / n as f64);
            f.gain_ms = f.gain_ms_per_iteration.map(|g| g * log_iterations(ev));
        }
        // A trace without iterations: its totals are all there is.
        None => f.gain_ms = trace_gain_ms,
    }
    f.step_share = Some(share.min(1.0));
    f
}

/// `{"k": v, …}` from pairs.
pub fn map(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The span of a log without a primitive (no timestamps of its own), from its PyTorch trace's
/// iterations: a compiled or f32 transformer that never called oneDNN.
///
/// A steady iteration's wall time times the iterations: an iteration that compiled
/// (torch.compile's first call, seconds long) is not the step the findings are shares of.
pub(crate) fn trace_span(ev: &Evidence) -> Option<f64> {
    ev.torch
        .and_then(|j| {
            // Over the log's iterations, as the findings' totals are.
            let n = ev
                .summary
                .iterations
                .as_ref()
                .map_or(j.per_iteration.len() as f64, |i| i.count as f64);
            Some(j.steady_step_ms()? * n)
        })
        .filter(|w| *w > 0.0 && ev.summary.calls == 0)
}
