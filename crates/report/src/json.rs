//! `--format json`: a documented, stable schema (see `docs/report-json.md`).

use profilednn_analysis::summary::{NamedBreakdown, Summary};
use serde_json::{json, Map, Value};

/// Version of the JSON layout; bumped on any incompatible change.
pub const SCHEMA: &str = "profilednn.report.v1";

fn breakdown_rows(b: &NamedBreakdown, sources: &[String]) -> Vec<Value> {
    b.rows
        .iter()
        .map(|r| {
            let mut o = Map::new();
            for (k, v) in b.keys.iter().zip(&r.values) {
                o.insert(k.name().to_string(), Value::String(v.clone()));
            }
            o.insert("calls".into(), json!(r.calls));
            o.insert("time_ms".into(), json!(r.time_ms));
            o.insert("share".into(), json!(r.share));
            o.insert("mean_ms".into(), json!(r.mean_ms));
            o.insert("min_ms".into(), json!(r.min_ms));
            o.insert("max_ms".into(), json!(r.max_ms));
            o.insert("median_ms".into(), json!(r.median_ms));
            o.insert("p90_ms".into(), json!(r.p90_ms));
            o.insert("primitives".into(), json!(r.primitives));
            o.insert("reference_impl".into(), json!(r.reference_impl));
            o.insert("flops_per_call".into(), json!(r.flops_per_call));
            o.insert("bytes_per_call".into(), json!(r.bytes_per_call));
            o.insert("gflops".into(), json!(r.gflops));
            o.insert("gbps".into(), json!(r.gbps));
            if let Some(p) = r.per_iteration_ms {
                o.insert("time_ms_per_iteration".into(), json!(p));
                o.insert("calls_per_iteration".into(), json!(r.calls_per_iteration));
            }
            if !r.per_log_time_ms.is_empty() {
                let per: Map<String, Value> = sources
                    .iter()
                    .zip(&r.per_log_time_ms)
                    .map(|(s, t)| (s.clone(), json!(t)))
                    .collect();
                o.insert("time_ms_per_log".into(), Value::Object(per));
            }
            Value::Object(o)
        })
        .collect()
}

pub fn to_value(s: &Summary) -> Value {
    let breakdowns: Map<String, Value> = s
        .breakdowns
        .iter()
        .map(|b| {
            (
                b.name.clone(),
                json!({
                    "title": b.title,
                    "keys": b.keys.iter().map(|k| k.name()).collect::<Vec<_>>(),
                    "total_rows": b.total_rows,
                    "rows": breakdown_rows(b, &s.sources),
                }),
            )
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "sources": s.sources,
        "bytes": s.bytes,
        "total_time_ms": s.total_time_ms,
        "calls": s.calls,
        "create_time_ms": s.create_time_ms,
        "create_calls": s.create_calls,
        "lines": s.lines,
        "iterations": s.iterations,
        "time_ms_per_iteration": s.per_iteration_time_ms,
        "wall_span_ms": s.wall_span_ms,
        "metadata": s.metadata,
        "breakdowns": breakdowns,
        "per_log": s.per_log,
        "malformed": s.malformed,
        "diagnostics": s.diagnostics.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<Map<_, _>>(),
        "read_errors": s.read_errors,
        "efficiency": s.efficiency,
    })
}

pub fn render(s: &Summary) -> String {
    serde_json::to_string_pretty(&to_value(s)).expect("JSON") + "\n"
}

/// The `ranks` list of multi-rank logs (every rank of every such log, each naming its log) and
/// `rank_logs`, each log's launcher and imbalance (docs/report-json.md).
pub fn ranks(sets: &[profilednn_analysis::ranks::RankSet]) -> (Value, Value) {
    let mut list = Vec::new();
    for set in sets {
        for r in &set.ranks {
            let mut v = serde_json::to_value(r).expect("JSON");
            v["log"] = json!(set.source);
            list.push(v);
        }
    }
    let logs = sets
        .iter()
        .map(|s| {
            json!({
                "log": s.source,
                "launcher": s.launcher,
                "ranks": s.ranks.len(),
                "nodes": s.nodes,
                "unlabelled_lines": s.unlabelled_lines,
                "imbalance": s.imbalance,
                "spread": s.spread,
            })
        })
        .collect();
    (Value::Array(list), Value::Array(logs))
}
