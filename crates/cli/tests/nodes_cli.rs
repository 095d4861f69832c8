//! Multi-node runs (issue 40 item 3): torchrun `--log-dir` trees of two nodes read together,
//! the nodes named with their ranks, and a slow node (every one of its ranks slow: the
//! machine) told apart from a slow rank. The fixtures are made here from rank 0's lines of the
//! real torchrun fixture, copied to 2 nodes × 3 ranks with some ranks' times × 1.3; the
//! expected figures follow from those factors, not from the tool.

mod common;
use common::{bin, failed, json_of, root, succeeded, temp_dir};
use serde_json::Value;
use std::io::Read;

/// The real torchrun fixture's lines, labels kept.
fn torchrun_lines() -> String {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(root().join("fixtures/multirank/torchrun_2ranks.log.gz")).unwrap(),
    )
    .read_to_string(&mut s)
    .unwrap();
    s
}

/// Rank 0's own lines of the real torchrun log (label removed).
fn rank0_lines() -> Vec<String> {
    torchrun_lines()
        .lines()
        .filter_map(|l| l.strip_prefix("[default0]:"))
        .map(str::to_string)
        .collect()
}

/// `report PATHS… --format json`.
fn report_json(paths: &[&std::path::Path]) -> Value {
    let mut args: Vec<&str> = vec!["report"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--format", "json"]);
    json_of(&args)
}

/// `DIR/node{0,1}/<run>_<random>/attempt_0/{0,1,2}/stdout.log`, as torchrun `--log-dir` writes
/// on each node; global rank `g` (node × 3 + local) gets its exec times × `factor(g)`.
fn two_nodes(name: &str, factor: impl Fn(u32) -> f64) -> std::path::PathBuf {
    let lines = rank0_lines();
    let dir = temp_dir().join(name);
    for node in 0..2u32 {
        for local in 0..3u32 {
            let g = node * 3 + local;
            let d = dir
                .join(format!("node{node}"))
                .join(format!("f00d-run_{node}x7q"))
                .join("attempt_0")
                .join(local.to_string());
            std::fs::create_dir_all(&d).unwrap();
            let mut out = String::new();
            for t in &lines {
                match t.rsplit_once(',') {
                    Some((head, ms)) if t.contains(",exec,") => {
                        out += &format!("{head},{}\n", ms.parse::<f64>().unwrap() * factor(g))
                    }
                    _ => out += &format!("{t}\n"),
                }
            }
            std::fs::write(d.join("stdout.log"), out).unwrap();
        }
    }
    dir
}

fn node_of(j: &Value, rank: u64) -> Value {
    j["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rank"] == rank)
        .unwrap()["node"]
        .clone()
}

#[test]
fn a_slow_node_is_named_as_the_machine() {
    let dir = two_nodes("slow_node", |g| if g >= 3 { 1.3 } else { 1.0 });
    let d = dir.to_str().unwrap();
    let j = report_json(&[&dir]);
    assert_eq!(j["ranks"].as_array().unwrap().len(), 6);
    let nodes = &j["rank_logs"][0]["nodes"];
    assert_eq!(nodes[0]["node"], "node0");
    assert_eq!(nodes[0]["ranks"], serde_json::json!([0, 1, 2]));
    assert_eq!(nodes[1]["node"], "node1");
    assert_eq!(nodes[1]["ranks"], serde_json::json!([3, 4, 5]));
    assert_eq!(node_of(&j, 4), "node1");
    let im = &j["rank_logs"][0]["imbalance"];
    assert_eq!(im["straggler_node"], "node1", "{im}");
    // The slowest ranks are node1's three, each naming it.
    let slowest = im["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 3, "{im}");
    assert!(slowest.iter().all(|r| r["node"] == "node1"), "{im}");
    let s = &im["slow_node"];
    assert_eq!(s["node"], "node1", "{im}");
    assert_eq!(s["ranks"], serde_json::json!([3, 4, 5]));
    // Every rank of node1 has 1.3 times node0's (identical) ranks' time.
    assert!((s["ratio"].as_f64().unwrap() - 1.3).abs() < 1e-9, "{s}");
    let text = String::from_utf8(bin().args(["report", d]).output().unwrap().stdout).unwrap();
    assert!(
        text.contains("2 nodes: node0 (ranks 0–2), node1 (ranks 3–5)"),
        "{text}"
    );
    assert!(
        text.contains("Slow node: node1: every one of its 3 ranks is slow"),
        "{text}"
    );
    let a = String::from_utf8(bin().args(["advise", d]).output().unwrap().stdout).unwrap();
    let line = a.lines().find(|l| l.contains("is the straggler")).unwrap();
    assert!(line.contains("its node node1 is slow as a whole"), "{line}");
}

#[test]
fn a_slow_rank_on_a_healthy_node_is_the_rank() {
    // Only rank 4 (node1's local rank 1) is slow.
    let dir = two_nodes("slow_rank", |g| if g == 4 { 1.3 } else { 1.0 });
    let d = dir.to_str().unwrap();
    let j = report_json(&[&dir]);
    let im = &j["rank_logs"][0]["imbalance"];
    assert_eq!(im["straggler"], 4, "{im}");
    assert_eq!(im["straggler_node"], "node1", "{im}");
    assert!(im["slow_node"].is_null(), "{im}");
    let text = String::from_utf8(bin().args(["report", d]).output().unwrap().stdout).unwrap();
    assert!(
        text.contains("A slow rank, not a slow node: rank 4 is on node1"),
        "{text}"
    );
    let a = String::from_utf8(bin().args(["advise", d]).output().unwrap().stdout).unwrap();
    let line = a.lines().find(|l| l.contains("is the straggler")).unwrap();
    assert!(
        line.contains("[rank 4, node node1] is the straggler"),
        "{line}"
    );
    assert!(line.contains("a slow rank, not a slow node"), "{line}");
}

#[test]
fn one_node_tree_has_no_nodes() {
    // The real single-node tree: ranks as before, no nodes.
    let j = report_json(&[&root().join("fixtures/multirank/torchrun_log_dir")]);
    assert!(j["rank_logs"][0]["nodes"].as_array().unwrap().is_empty());
    assert!(node_of(&j, 1).is_null());
}

/// `profilednn record --ranks -o LOG -- <fake torchrun> --nnodes 2 --node-rank K
/// --nproc-per-node 2 t.py`, the fake printing the real fixture's two labelled ranks (node 1's
/// exec times × `factor`), as each node's torchrun would.
fn record_node(dir: &std::path::Path, node: u32, factor: f64) -> std::path::PathBuf {
    let mut out = String::new();
    for l in torchrun_lines().lines() {
        match l.rsplit_once(',') {
            Some((head, ms)) if l.contains(",exec,") && l.contains("_verbose,") => {
                out += &format!("{head},{}\n", ms.parse::<f64>().unwrap() * factor)
            }
            _ => out += &format!("{l}\n"),
        }
    }
    let sub = dir.join(format!("n{node}"));
    std::fs::create_dir_all(&sub).unwrap();
    let printed = sub.join("printed.txt");
    std::fs::write(&printed, out).unwrap();
    let exe = sub.join("torchrun");
    std::fs::write(&exe, format!("#!/bin/sh\ncat '{}'\n", printed.display())).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let log = dir.join(format!("node{node}.log"));
    let record = format!("record --ranks --no-report -o {} --", log.display());
    let launch = format!("--nnodes 2 --node-rank {node} --nproc-per-node 2 t.py");
    let run = bin()
        .args(record.split(' '))
        .arg(&exe)
        .args(launch.split(' '))
        .output();
    succeeded(run.unwrap());
    log
}

#[test]
fn record_ranks_names_the_node_and_report_joins_the_nodes_logs() {
    let dir = temp_dir().join("recorded_nodes");
    let n0 = record_node(&dir, 0, 1.0);
    let n1 = record_node(&dir, 1, 1.3);
    let first = std::fs::read_to_string(&n1).unwrap();
    let first = first.lines().next().unwrap();
    assert!(
        first.starts_with("profilednn,node,node1,rank,2,host,"),
        "{first}"
    );
    let j = report_json(&[&n0, &n1]);
    let nodes = &j["rank_logs"][0]["nodes"];
    assert_eq!(nodes[0]["ranks"], serde_json::json!([0, 1]), "{nodes}");
    assert_eq!(nodes[1]["node"], "node1");
    assert_eq!(nodes[1]["ranks"], serde_json::json!([2, 3]));
    assert_eq!(j["ranks"].as_array().unwrap().len(), 4);
    // The fixture's rank 1 has twice rank 0's batch, on both nodes: node1's ranks are
    // 1.3 × node0's; its fastest (rank 2, 1.3 × rank 0) against node0's lower median (rank 0).
    let s = &j["rank_logs"][0]["imbalance"]["slow_node"];
    assert_eq!(s["node"], "node1", "{s}");
    assert!((s["ratio"].as_f64().unwrap() - 1.3).abs() < 1e-9, "{s}");
    // The same node twice is refused, naming both files.
    let twice = bin().arg("report").args([&n1, &n1]).output().unwrap();
    let err = failed(twice);
    assert!(err.contains("both hold rank 2"), "{err}");
}
