//! Self-contained HTML pages (no CDN, no server): data as embedded JSON, drawn by a small
//! vanilla-JS renderer into SVG and tables. Opens from a laptop's disk.

use profilednn_advice::Advice;
use profilednn_analysis::diff::Diff;
use profilednn_analysis::timeline::TimeBins;
use profilednn_analysis::{Efficiency, EventKind, Profile, Summary};
use serde_json::{json, Value};

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");
/// The advice's what-if projections, embedded only when the advice has some (pages without
/// projections stay byte for byte as before).
const PROJECTION_JS: &str = include_str!("projection.js");
/// The page of `project --to`: drawn by its own script, report.js leaves it alone.
const MACHINES_JS: &str = include_str!("machines.js");

/// What the report page shows besides the summary.
pub struct ReportPage<'a> {
    pub summary: &'a Summary,
    /// The merged profile: every unique primitive goes into the table and the sunburst.
    pub profile: &'a Profile,
    pub advice: Option<&'a Advice>,
    /// Efficiency over *all* primitives (for the roofline scatter).
    pub efficiency: Option<&'a Efficiency>,
    pub timeline: Option<&'a TimeBins>,
    /// The PyTorch view, when a profiler trace was given.
    pub torch: Option<&'a profilednn_torchtrace::TorchJoin>,
    /// The ranks of multi-rank logs (empty for single-process logs).
    pub ranks: &'a [profilednn_analysis::ranks::RankSet],
}

/// Each rank's time per kind and propagation, `{group, per_rank: {log: {rank: ms}}}`: the
/// merged breakdown's per-log columns, keyed back to the ranks they came from.
fn rank_groups(s: &Summary, sets: &[profilednn_analysis::ranks::RankSet]) -> Value {
    let Some(b) = s
        .breakdowns
        .iter()
        .find(|b| b.name == "prim_kind,prop_kind")
    else {
        return json!([]);
    };
    let rows: Vec<Value> = b
        .rows
        .iter()
        .map(|row| {
            let mut per = serde_json::Map::new();
            for set in sets {
                let mut m = serde_json::Map::new();
                for r in &set.ranks {
                    let i = s.per_log.iter().position(|l| l.source == r.source);
                    if let Some(t) = i.and_then(|i| row.per_log_time_ms.get(i)) {
                        m.insert(r.rank.to_string(), json!(t));
                    }
                }
                per.insert(set.source.clone(), Value::Object(m));
            }
            json!({ "group": row.values.join(" "), "per_rank": per })
        })
        .collect();
    Value::Array(rows)
}

fn primitives(p: &Profile) -> Vec<Value> {
    let mut v: Vec<Value> = p
        .entries
        .iter()
        .filter(|e| e.event == EventKind::Exec)
        .map(|e| {
            let pr = &e.primitive;
            let (flops, bytes) = match &e.cost {
                Ok(c) => (json!(c.flops), json!(c.bytes)),
                Err(_) => (Value::Null, Value::Null),
            };
            json!({
                "kind": pr.kind.to_string(),
                "prop": pr.prop_kind.to_string(),
                "impl": pr.implementation,
                "dtype": pr.dtype_summary(),
                "shapes": pr.problem,
                "mds": pr.mds_string(),
                "exts": pr.exts_string(),
                "aux": pr.aux_string(),
                "calls": e.calls,
                "time_ms": e.time_ms(),
                "median_ms": e.durations.quantile_ms(0.5),
                "p90_ms": e.durations.quantile_ms(0.9),
                "flops": flops,
                "bytes": bytes,
                "ref": pr.is_reference_impl(),
            })
        })
        .collect();
    v.sort_by(|a, b| {
        b["time_ms"]
            .as_f64()
            .unwrap_or(0.0)
            .total_cmp(&a["time_ms"].as_f64().unwrap_or(0.0))
    });
    v
}

/// `extra_js`: a script run after the renderer (the advice's projections).
fn page(title: &str, data: &Value, extra_js: Option<&str>) -> String {
    // `</` inside a script element would end it early.
    let data = serde_json::to_string(data)
        .expect("JSON")
        .replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{CSS}</style></head>\n<body data-status=\"loading\"><main id=\"app\"><noscript>This report needs JavaScript.</noscript></main>\n<script id=\"data\" type=\"application/json\">{data}</script>\n<script>{JS}</script>\n{}</body></html>\n",
        html_escape(title),
        extra_js
            .map(|js| format!("<script>{js}</script>\n"))
            .unwrap_or_default()
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn report_page(r: &ReportPage) -> String {
    let s = r.summary;
    let data = json!({
        "page": "report",
        "sources": s.sources,
        "metadata": s.metadata,
        "lines": s.lines,
        "total_time_ms": s.total_time_ms,
        "calls": s.calls,
        "create_time_ms": s.create_time_ms,
        "create_calls": s.create_calls,
        "iterations": s.iterations,
        "per_iteration_time_ms": s.per_iteration_time_ms,
        "wall_span_ms": s.wall_span_ms,
        "primitives": primitives(r.profile),
        "efficiency": r.efficiency,
        "timeline": r.timeline,
        "torch": r.torch,
        "advice": r.advice,
        "malformed": s.malformed,
        "diagnostics": s.diagnostics.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "read_errors": s.read_errors,
    });
    let mut data = data;
    if !r.ranks.is_empty() {
        let (list, logs) = crate::json::ranks(r.ranks);
        data["ranks"] = list;
        data["rank_logs"] = logs;
        data["rank_groups"] = rank_groups(s, r.ranks);
    }
    let projected = r.advice.is_some_and(|a| {
        !a.projections.is_empty() || !a.step_projections.is_empty() || !a.not_recommended.is_empty()
    });
    page(
        &format!("ProfileDNN: {}", s.sources.join(", ")),
        &data,
        projected.then_some(PROJECTION_JS),
    )
}

/// The diff page; `torch` adds the comparison of both runs' PyTorch views.
pub fn diff_page(
    d: &Diff,
    torch: Option<&profilednn_analysis::torch_compare::TorchComparison>,
) -> String {
    let data = json!({ "page": "diff", "diff": d, "torch": torch });
    page(
        &format!("ProfileDNN diff: {} vs {}", d.before, d.after),
        &data,
        None,
    )
}

/// `project --to --format html`: the step on each target, side by side, with its band.
pub fn machines_page(d: &profilednn_project::target::MachineProjection) -> String {
    let data = json!({ "page": "machines", "projection": d });
    page(
        &format!("ProfileDNN: {} on other machines", d.log),
        &data,
        Some(MACHINES_JS),
    )
}
