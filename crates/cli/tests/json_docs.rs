//! The JSON outputs of `replay` and `project` documented key by key: `docs/replay-json.md` and
//! `docs/project-json.md` list every key a real run emits, and no key it does not. The keys are
//! read from the documents' tables and from the runs' JSON, independently of the code's structs.
//!
//! Without oneDNN the replay side is the committed results file of a real replay
//! (`fixtures/replay`), also read and written back by the current code so that fields added
//! since it was made are checked too; the what-if keys need a what-if replay, so that test needs
//! `PROFILEDNN_DNNL_LIB` (else SKIPPED, unless PROFILEDNN_REQUIRE_ONEDNN=1).

mod common;
use common::{bin, dnnl_lib_or_skip, json_of, root, succeeded, temp_dir};
use serde_json::Value;
use std::collections::BTreeSet;

/// Objects whose keys are data (problem keys), not fields.
const MAPS: &[&str] = &["rewritten_from", "by_phase", "by_family", "by_runs_in"];

/// Objects keyed by the projection's methods: a projection has the methods it used, so their
/// keys are checked to be documented method names, not to be all of them.
const METHOD_MAPS: &[&str] = &["coverage", "methods"];

/// The methods, as `docs/project-json.md` names them (`carried_over` was once emitted as
/// `carriedover`, from a `Debug` name lowercased).
const METHODS: &[&str] = &["carried_over", "replayed", "roofline"];

const LOG: &str = "fixtures/advice/bf16_without_bf16_units.log";
const REPLAY: &str = "fixtures/replay/bf16_without_bf16_units.replay.json";
/// A whole-step replay (`replay --torch-trace`) of a transformer fixture, and its log.
const TORCH_REPLAY: &str = "fixtures/replay/mlp-f32.torch.replay.json";
const TORCH_LOG: &str = "fixtures/torch/mlp-f32.log.gz";

/// The names in the first column of the document's tables (`a`, `b` rows name two), as
/// (the keys outside the `what_if` and whole-step sections, the keys of the `what_if` section).
fn documented(doc: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (main, what_if, _) = documented_sections(doc);
    (main, what_if)
}

/// As [`documented`], with the keys of the whole-step sections (`framework`, `step`: emitted
/// only with `--torch-trace`) third.
fn documented_sections(doc: &str) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(root().join("docs").join(doc)).unwrap();
    let (mut main, mut what_if, mut step) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    let (mut in_what_if, mut in_step) = (false, false);
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            in_what_if = h.contains("`what_if`");
            in_step = h.contains("`framework") || h.contains("`step`");
            continue;
        }
        let Some(row) = line.strip_prefix("| `") else {
            continue;
        };
        let first = row.split('|').next().unwrap();
        let names = format!("`{first}")
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect::<Vec<_>>();
        assert!(!names.is_empty(), "{doc}: a row without a key: {line}");
        if in_what_if {
            &mut what_if
        } else if in_step {
            &mut step
        } else {
            &mut main
        }
        .extend(names);
    }
    (main, what_if, step)
}

/// Every object key in `v`, not descending into the objects of [`MAPS`].
fn emitted(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                if METHOD_MAPS.contains(&k.as_str()) {
                    let methods = x.as_object().expect("a map of methods");
                    for name in methods.keys() {
                        assert!(METHODS.contains(&name.as_str()), "{k}: method {name}");
                    }
                } else if !MAPS.contains(&k.as_str()) {
                    emitted(x, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| emitted(x, out)),
        _ => {}
    }
}

fn keys(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    emitted(v, &mut out);
    out
}

/// The committed results file, and the same file read and written back by the current code:
/// a field added since the file was made (`sequence.block_ms`, `estimate_ms`, `dispersion`,
/// `weight_reorders_resolved` once were) is written with its default, so it must be documented
/// too — the committed file alone could not show it.
#[test]
fn replay_results_file_keys_and_fields_added_since_are_the_documented_ones() {
    let text = std::fs::read_to_string(root().join(REPLAY)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let (main, _) = documented("replay-json.md");
    assert!(keys(&v).is_subset(&main), "{:?}", &keys(&v) - &main);
    let now: profilednn_replay::Replay = serde_json::from_str(&text).unwrap();
    let now = serde_json::to_value(&now).unwrap();
    assert_eq!(keys(&now), main);
    assert!(keys(&v).is_subset(&keys(&now)));
}

#[test]
fn project_json_keys_are_the_documented_ones() {
    let log = root().join(LOG).display().to_string();
    let replay = root().join(REPLAY).display().to_string();
    let v = json_of(&["project", &log, "--replay", &replay, "--json"]);
    let documented = documented("project-json.md").0;
    let methods: BTreeSet<String> = METHODS.iter().map(|m| m.to_string()).collect();
    assert!(methods.is_subset(&documented), "{documented:?}");
    assert_eq!(keys(&v), &documented - &methods);
    // This log's problems oneDNN could not replay are carried over, under the documented key.
    assert!(
        v["coverage"]["carried_over"].as_f64().unwrap() > 0.0,
        "{}",
        v["coverage"]
    );
}

#[test]
fn what_if_keys_of_replay_and_project_are_the_documented_ones() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let dir = temp_dir();
    let results = dir.join("r.json").display().to_string();
    let log = root().join(LOG).display().to_string();
    succeeded(
        bin()
            .args([
                "replay",
                &log,
                "--as",
                "bf16",
                "--no-progress",
                "--warmup",
                "1",
            ])
            .args(["--dnnl-lib", &lib, "-o", &results])
            .output()
            .unwrap(),
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let (main, what_if) = documented("replay-json.md");
    // `skipped`'s `kind` and `message` are there when a problem was not replayed (on a CPU
    // without bf16 units, the bf16 ones).
    let skipped = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["skipped"].is_object());
    let v2_reason: BTreeSet<String> = ["kind", "message"].map(String::from).into();
    let absent = if skipped { BTreeSet::new() } else { v2_reason };
    assert_eq!(keys(&v), &(&main | &what_if) - &absent);
    let v = json_of(&["project", &log, "--replay", &results, "--json"]);
    let (main, what_if) = documented("project-json.md");
    let methods: BTreeSet<String> = METHODS.iter().map(|m| m.to_string()).collect();
    assert_eq!(keys(&v), &(&main | &what_if) - &methods);
}

/// A replay made with `--torch-trace` (committed: it needs PyTorch), and its projection: the
/// whole-step keys are the documented ones, and the projected step is the file's own figures
/// summed by hand (each op here, the rest as logged).
#[test]
fn whole_step_keys_of_replay_and_project_are_the_documented_ones() {
    let text = std::fs::read_to_string(root().join(TORCH_REPLAY)).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    // `precision`, `layout` and `batch` are written for the what-ifs only, and `low_precision`
    // for ops recorded in bf16; this replay is of an f32 run, as recorded.
    let as_recorded: BTreeSet<String> = ["precision", "layout", "batch", "low_precision"]
        .map(String::from)
        .into();
    let (main, _, step) = documented_sections("replay-json.md");
    // The committed file is a v1 one: its skip reasons are bare messages (no `kind`/`message`),
    // and it predates `onednn_verbose` (read back as false).
    let v2_only: BTreeSet<String> = ["kind", "message", "onednn_verbose"]
        .map(String::from)
        .into();
    assert_eq!(keys(&v), &(&(&main | &step) - &as_recorded) - &v2_only);
    let log = root().join(TORCH_LOG).display().to_string();
    let replay = root().join(TORCH_REPLAY).display().to_string();
    let p = json_of(&["project", &log, "--replay", &replay, "--json"]);
    let (main, _, step) = documented_sections("project-json.md");
    let methods: BTreeSet<String> = METHODS.iter().map(|m| m.to_string()).collect();
    assert_eq!(keys(&p), &(&(&main | &step) - &methods) - &as_recorded);
    let f = &v["framework"];
    let by_hand = f["outside_units_ms"].as_f64().unwrap()
        + f["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["replayed_ms"].as_f64().unwrap())
            .sum::<f64>();
    let projected = p["projected_step_ms"].as_f64().unwrap();
    assert!(
        (projected - by_hand).abs() < 1e-9,
        "{projected} vs {by_hand}"
    );
    assert_eq!(p["logged_step_ms"], f["logged_step_ms"]);
}
