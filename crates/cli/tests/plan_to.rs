//! `plan --to TARGET`: the splits of a machine not at hand, each rank's step projected there
//! (`project --to`) rather than replayed. Checked against `project --to`'s own output at the
//! rank's threads, worked by hand to the rank's batch, on real recordings of the machine library.

mod common;
use common::{bin, failed, json_of, repo as path, row_where};
use serde_json::Value;

const LOG: &str = "fixtures/torch/gpt-f32.log.gz";
const TRACE: &str = "fixtures/torch/gpt-f32.trace.json.gz";
const FROM: &str = "machines/epyc-zen4-25-17/profile.json";
const TO: &str = "machines/xeon-6-207-amx/profile.json";

/// `profilednn COMMAND LOG --torch-trace TRACE --from FROM --to TO EXTRA… --format json`.
fn on_target(command: &str, extra: &[&str]) -> Value {
    let (log, trace, from, to) = (path(LOG), path(TRACE), path(FROM), path(TO));
    let mut args = vec![
        command,
        &log,
        "--torch-trace",
        &trace,
        "--from",
        &from,
        "--to",
        &to,
    ];
    args.extend(extra);
    args.extend(["--format", "json"]);
    json_of(&args)
}

/// `project --to` at `threads`: (oneDNN + costed framework ops, rest) per iteration.
fn projected_parts(threads: &str) -> (f64, f64) {
    let v = on_target("project", &["--threads", threads]);
    let parts = v["targets"][0]["parts"].as_array().unwrap().clone();
    let ms = |p: &Value| p["projected_ms"].as_f64().unwrap();
    let per_sample: f64 = parts
        .iter()
        .filter(|p| p["name"] == "oneDNN" || p["name"] == "framework ops (costed)")
        .map(ms)
        .sum();
    let rest: f64 = parts
        .iter()
        .filter(|p| p["name"].as_str().unwrap().starts_with("rest"))
        .map(ms)
        .sum();
    assert!(per_sample > 0.0 && rest > 0.0, "{parts:?}");
    (per_sample, rest)
}

/// The transformer recorded on the Zen 4 (batch 4, 2 threads), planned on the Xeon's 2 cores:
/// the logged split 1×2 is `project --to`'s step; 2×1 runs half the batch on one thread, so its
/// compute is the one-thread projection's oneDNN and framework part halved, its outside the rest.
#[test]
fn each_split_is_the_projection_at_its_threads_and_batch() {
    let plan = on_target("plan", &[]);
    assert_eq!(plan["schema"], "profilednn.plan.v2");
    assert_eq!(plan["cores"], 2, "the target profile's threads");
    assert_eq!(plan["to"]["profile_kind"], "measured");
    assert!(plan["to"]["band_relative"].as_f64().unwrap() > 0.0);
    let rows = &plan["rows"];
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);

    let (ps, rest) = projected_parts("2");
    let r = row_where(rows, "split", "1x2");
    assert_eq!(r["per_rank_batch"], 4);
    assert!(close(r["compute_ms"].as_f64().unwrap(), ps), "{r}");
    assert!(close(r["outside_ms"].as_f64().unwrap(), rest), "{r}");
    assert_eq!(r["allreduce_ms"], 0.0);
    assert!(close(r["total_ms"].as_f64().unwrap(), ps + rest), "{r}");

    let (ps1, rest1) = projected_parts("1");
    let r = row_where(rows, "split", "2x1");
    assert_eq!(r["per_rank_batch"], 2);
    assert!(
        close(r["compute_ms"].as_f64().unwrap(), ps1 * 2.0 / 4.0),
        "{r}"
    );
    assert!(close(r["outside_ms"].as_f64().unwrap(), rest1), "{r}");
    let ar = r["allreduce_ms"].as_f64().unwrap();
    assert!(ar > 0.0);
    assert!(
        close(r["total_ms"].as_f64().unwrap(), ps1 / 2.0 + rest1 + ar),
        "{r}"
    );
}

/// Two nodes: the ranks double, each takes a quarter of the batch on the logged split's
/// threads, and the network adds to the all-reduce.
#[test]
fn nodes_divide_the_batch_and_cross_the_network() {
    let plan = on_target("plan", &["--nodes", "2", "--network-gbps", "10"]);
    let (ps, rest) = projected_parts("2");
    let r = row_where(&plan["rows"], "split", "1x2");
    assert_eq!(r["world_ranks"], 2);
    assert_eq!(r["per_rank_batch"], 2);
    let c = r["compute_ms"].as_f64().unwrap();
    assert!((c - ps / 2.0).abs() < 1e-6, "{c} against {}", ps / 2.0);
    assert!((r["outside_ms"].as_f64().unwrap() - rest).abs() < 1e-6);
    assert!(r["allreduce_network_ms"].as_f64().unwrap() > 0.0, "{r}");
}

/// A spec sheet without `threads` needs `--cores`; `--to` with `--dry-run` (nothing to skip)
/// is refused.
#[test]
fn a_target_without_threads_asks_for_cores() {
    let dir = common::temp_dir();
    let spec = dir.join("no-threads.json");
    std::fs::write(
        &spec,
        r#"{"schema": "profilednn.machine.v1", "name": "no threads", "peak_gflops": {"f32": 1000}, "memory_gbps": 100}"#,
    )
    .unwrap();
    let (log, from) = (path(LOG), path(FROM));
    let err = failed(
        bin()
            .args(["plan", &log, "--from", &from, "--to"])
            .arg(&spec)
            .output()
            .unwrap(),
    );
    assert!(err.contains("--cores"), "{err}");
    let trace = path(TRACE);
    let plan = json_of(&[
        "plan",
        &log,
        "--torch-trace",
        &trace,
        "--from",
        &from,
        "--to",
        spec.to_str().unwrap(),
        "--cores",
        "4",
        "--format",
        "json",
    ]);
    assert_eq!(plan["cores"], 4);
    assert_eq!(plan["to"]["profile_kind"], "spec_sheet");
    let err = failed(
        bin()
            .args(["plan", &log, "--to", spec.to_str().unwrap(), "--dry-run"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("--dry-run"), "{err}");
}
