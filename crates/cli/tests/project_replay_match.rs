//! `project --replay` checks that the replay is of this log: its problems against the log's, by
//! key. The replay fixture was made from `fixtures/advice/bf16_without_bf16_units.log`
//! (`profilednn replay … --threads 1`, oneDNN 3.2). References: the logs' unique problems
//! counted from the text (kind and every field after the implementation but the time).

use std::collections::BTreeSet;

mod common;
use common::{bin, root};

const REPLAY: &str = "fixtures/replay/bf16_without_bf16_units.replay.json";

fn problems(rel: &str) -> BTreeSet<Vec<String>> {
    std::fs::read_to_string(root().join(rel))
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>())
        .filter(|f| f.len() > 2 && f[1] == "exec")
        .map(|f| {
            let mut k = vec![f[3].clone()];
            k.extend(f[5..f.len() - 1].iter().cloned());
            k
        })
        .collect()
}

fn project(log: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["project", log, "--replay", REPLAY, "--json"];
    args.extend(extra);
    bin().current_dir(root()).args(&args).output().unwrap()
}

#[test]
fn project_replay_of_another_log_is_refused_or_warned() {
    let own = "fixtures/advice/bf16_without_bf16_units.log";
    let n_own = problems(own).len();
    assert_eq!(n_own, 28);
    // Its own log: every problem matched, no warning.
    let out = project(own, &[]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["replay_match"]["log_problems"], n_own);
    assert_eq!(j["replay_match"]["matched_problems"], n_own);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("WARNING"));

    // An f32 log of the same program: no problem in common — refused, naming both sources.
    let other = "fixtures/corpus/onednn/v3_2_pypi/train_f32.level1.log";
    assert!(problems(other).is_disjoint(&problems(own)));
    let out = project(other, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not of this log"), "{err}");
    assert!(err.contains(other) && err.contains(own), "{err}");
    assert!(
        err.contains(&format!(
            "0 of the log's {} problems",
            problems(other).len()
        )),
        "{err}"
    );
    // … unless asked to, and then loudly.
    let out = project(other, &["--allow-mismatch"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("WARNING"));

    // The bf16 run with attributes: some problems in common, fewer than half its time — warned.
    let some = "fixtures/corpus/onednn/v3_2_pypi/train_bf16_attrs.level1.log";
    let common = problems(some).intersection(&problems(own)).count();
    assert!(common > 0);
    let out = project(some, &[]);
    assert!(out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The replay key (a benchdnn line) ignores memory-descriptor flags (`a:`/`ap:`), so it
    // matches at least the problems whose text is identical, and not all of them.
    let m = &j["replay_match"];
    let matched = m["matched_problems"].as_u64().unwrap() as usize;
    assert!(matched >= common && matched < problems(some).len(), "{m}");
    assert!(m["matched_time_share"].as_f64().unwrap() < 0.5, "{m}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("WARNING") && err.contains(some) && err.contains(own),
        "{err}"
    );
}
