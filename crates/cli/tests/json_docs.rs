//! Every JSON document ProfileDNN writes, checked against its documentation.
//!
//! `docs/formats.md` lists each schema (`profilednn.NAME.vN`) with its page; every document a
//! real run writes names its schema and its page lists each top-level field it has; every schema
//! the sources name is in that list. The outputs of `replay` and `project` are also documented
//! key by key: `docs/replay-json.md` and `docs/project-json.md` list every key a real run emits,
//! and no key it does not. The keys are read from the documents' tables and from the runs' JSON,
//! independently of the code's structs.
//!
//! Without oneDNN the replay side is the committed results file of a real replay
//! (`fixtures/replay`), also read and written back by the current code so that fields added
//! since it was made are checked too; the what-if keys need a what-if replay, so that test needs
//! `PROFILEDNN_DNNL_LIB` (else SKIPPED, unless PROFILEDNN_REQUIRE_ONEDNN=1). The PyTorch replay
//! helper's answer needs a Python with PyTorch (else SKIPPED, unless PROFILEDNN_REQUIRE_TORCH=1).

mod common;
use common::{bin, dnnl_lib_or_skip, json_of, root, succeeded, temp_dir};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

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
    // This log and its replay are of one oneDNN version: no `version_gap` (the whole-step
    // test below has one).
    assert_eq!(
        keys(&v),
        &(&documented - &methods) - &gap_keys_unless_gap(&v)
    );
    // This log's problems oneDNN could not replay are carried over, under the documented key.
    assert!(
        v["coverage"]["carried_over"].as_f64().unwrap() > 0.0,
        "{}",
        v["coverage"]
    );
}

/// The keys of `version_gap`, written only where the log's and the replay's oneDNN differ: none
/// to leave out of the documented ones when `project`'s output `v` has one.
fn gap_keys_unless_gap(v: &Value) -> BTreeSet<String> {
    if v.get("version_gap").is_some() {
        return BTreeSet::new();
    }
    [
        "version_gap",
        "recorded_onednn",
        "replayed_onednn",
        "assumed_change",
        "why",
    ]
    .map(String::from)
    .into()
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
    assert_eq!(
        keys(&v),
        &(&(&main | &what_if) - &methods) - &gap_keys_unless_gap(&v)
    );
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

// Every document, not only replay's and project's: each names its schema, `docs/formats.md`
// gives each schema its page, and the page lists every top-level field a real document has.

/// `docs/formats.md`'s tables: schema → page (under docs/), the versions written now first and
/// the older ones still read second.
fn formats() -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let text = std::fs::read_to_string(root().join("docs/formats.md")).unwrap();
    let (mut now, mut older) = (BTreeMap::new(), BTreeMap::new());
    let mut in_older = false;
    for line in text.lines() {
        in_older |= line.starts_with("Older versions");
        let Some(row) = line.strip_prefix("| `profilednn.") else {
            continue;
        };
        let schema = format!("profilednn.{}", row.split('`').next().unwrap());
        let page = row.split("](").nth(1).and_then(|p| p.split(')').next());
        let page = page.unwrap_or_else(|| panic!("formats.md: no page linked: {line}"));
        let table = if in_older { &mut older } else { &mut now };
        assert!(table.insert(schema, page.to_string()).is_none(), "{line}");
    }
    (now, older)
}

/// The field names a page lists: its tables' first column, and the keys (`"key":`) of the
/// documents it shows.
fn listed(page: &str) -> BTreeSet<String> {
    let (a, b, c) = documented_sections(page);
    let mut out = &(&a | &b) | &c;
    let text = std::fs::read_to_string(root().join("docs").join(page)).unwrap();
    for piece in text.split('"').collect::<Vec<_>>().windows(2) {
        if piece[1].trim_start().starts_with(':') && !piece[0].contains(char::is_whitespace) {
            out.insert(piece[0].to_string());
        }
    }
    out
}

/// The schema a document names: `schema`, `format` (the Python package's), or the Chrome
/// trace's `otherData.schema`.
fn schema_of(v: &Value) -> String {
    [&v["schema"], &v["format"], &v["otherData"]["schema"]]
        .into_iter()
        .find_map(Value::as_str)
        .unwrap_or_else(|| panic!("a document without a schema: {}", keys(v).len()))
        .to_string()
}

/// A Python with PyTorch (`PROFILEDNN_TORCH_PYTHON`, else the project's `target/pyenv`), or
/// `None` with SKIPPED printed (a panic with PROFILEDNN_REQUIRE_TORCH=1).
fn torch_python() -> Option<String> {
    let py = std::env::var("PROFILEDNN_TORCH_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| root().join("target/pyenv/bin/python").display().to_string());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var("PROFILEDNN_REQUIRE_TORCH").as_deref() == Ok("1") {
        panic!("{py} cannot import torch (PROFILEDNN_REQUIRE_TORCH=1)");
    }
    if !ok {
        eprintln!("SKIPPED: the torch-replay document needs a Python with PyTorch ({py})");
    }
    ok.then_some(py)
}

/// The JSON that `python -c CODE` prints, run from the package's sources (`python/`).
fn python_json(py: &str, code: &str) -> Value {
    let out = std::process::Command::new(py)
        .args(["-c", code])
        .current_dir(root().join("python"))
        .output()
        .unwrap();
    serde_json::from_slice(&succeeded(out).stdout).unwrap()
}

/// One document of each schema written now, made by the code that writes it (files that need
/// oneDNN or a measurement are committed ones read and written back, as replay's above).
fn documents() -> Vec<Value> {
    let log = root().join(LOG).display().to_string();
    let replay = root().join(REPLAY).display().to_string();
    let ranks = root().join("fixtures/multirank/torchrun_2ranks.log.gz");
    let ranks = ranks.display().to_string();
    let (from, to) = ("machines/epyc-zen4-25-17", "machines/xeon-6-167-amx");
    let (from, to) = (root().join(from), root().join(to));
    let machine = from.join("profile.json");
    let dir = temp_dir();
    let mut docs = vec![
        json_of(&["report", &log, "--format", "json"]),
        json_of(&["report", &ranks, "--format", "json"]),
        json_of(&["advise", &log, "--format", "json"]),
        json_of(&["project", &log, "--replay", &replay, "--json"]),
        json_of(&[
            "plan",
            &log,
            "--cores",
            "2",
            "--dry-run",
            "--format",
            "json",
        ]),
        json_of(&["diff", &log, &log, "--format", "json"]),
        json_of(&[
            "plan",
            &root()
                .join("fixtures/torch/gpt-f32.log.gz")
                .display()
                .to_string(),
            "--torch-trace",
            &root()
                .join("fixtures/torch/gpt-f32.trace.json.gz")
                .display()
                .to_string(),
            "--from",
            &machine.display().to_string(),
            "--to",
            &to.join("profile.json").display().to_string(),
            "--format",
            "json",
        ]),
    ];
    // Read as the tools read it (a v1 file migrated), written as `replay` writes it.
    let text = std::fs::read_to_string(root().join(REPLAY)).unwrap();
    let r = profilednn_replay::Replay::from_json(&text).unwrap();
    docs.push(serde_json::to_value(&r).unwrap());
    // A profile `peak` measured (v2), read and written back.
    let text = std::fs::read_to_string(&machine).unwrap();
    let m: profilednn_machine::MachineProfile = serde_json::from_str(&text).unwrap();
    docs.push(serde_json::to_value(&m).unwrap());
    // `record --ranks` around a stand-in launcher named torchrun, which starts one rank.
    let torchrun = dir.join("torchrun");
    std::fs::write(&torchrun, "#!/bin/sh\nRANK=0 sleep 0.5\n").unwrap();
    std::fs::set_permissions(
        &torchrun,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let ranked = dir.join("r.log").display().to_string();
    let record = ["record", "--ranks", "--no-report", "-o", &ranked, "--"];
    succeeded(bin().args(record).arg(&torchrun).output().unwrap());
    let launch = std::fs::read_to_string(dir.join("r.launch.json")).unwrap();
    docs.push(serde_json::from_str(&launch).unwrap());
    let results = dir.join("results.txt");
    std::fs::write(&results, "perf,cpu,jit:avx512_core,,--mode=P --conv --dir=FWD_B mb2_ic64oc64_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0,0.0513802,3.1,0.5,102.76,0.55,93.4\n").unwrap();
    docs.push(json_of(&[
        "benchdnn",
        "--ingest",
        results.to_str().unwrap(),
    ]));
    let trace = dir.join("t.json");
    succeeded(
        bin()
            .args(["trace", &log, "-o", trace.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    docs.push(serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap());
    docs.push(json_of(&[
        "project",
        &log,
        "--from",
        &from.join("profile.json").display().to_string(),
        "--to",
        &to.join("profile.json").display().to_string(),
        "--format",
        "json",
    ]));
    // `optimize`'s report needs no PyTorch: its module is loaded alone.
    docs.push(python_json(
        "python3",
        "import importlib.util as u, json; s = u.spec_from_file_location('r', 'profilednn/_optimize/report.py'); \
         r = u.module_from_spec(s); s.loader.exec_module(r); \
         print(json.dumps(r.Report(10.0, 9.0, [r.Change('channels-last', True, 1.1, 1.1, 'faster')]).to_dict()))",
    ));
    if let Some(py) = torch_python() {
        docs.push(python_json(
            &py,
            "import json; from profilednn.replay_ops import run; \
             print(json.dumps(run({'units': [], 'runs': 1, 'profiler': False})))",
        ));
        docs.push(python_json(
            &py,
            "import json; from profilednn.replay_ops import run; \
             print(json.dumps(run({'units': [], 'what_if': {'batch': 3}})))",
        ));
    }
    docs
}

#[test]
fn every_document_names_its_schema_and_its_page_lists_its_fields() {
    let (now, _) = formats();
    let mut seen = BTreeSet::new();
    for v in documents() {
        let schema = schema_of(&v);
        let page = now
            .get(&schema)
            .unwrap_or_else(|| panic!("{schema}: not in docs/formats.md"));
        let listed = listed(page);
        let mut fields: BTreeSet<String> = v.as_object().unwrap().keys().cloned().collect();
        if let Some(other) = v["otherData"].as_object() {
            fields.extend(other.keys().cloned());
        }
        assert!(
            fields.is_subset(&listed),
            "{page} does not list {:?} of {schema}",
            &fields - &listed
        );
        seen.insert(schema);
    }
    let mut unseen: BTreeSet<&String> = now.keys().filter(|s| !seen.contains(*s)).collect();
    if torch_python().is_none() {
        unseen.remove(&"profilednn.torch-replay.v1".to_string());
    }
    assert!(unseen.is_empty(), "no document checked for {unseen:?}");
}

/// Every `profilednn.NAME.vN` the sources name outside their tests (schemas written, schemas
/// read, and the doc comments pointing at them) is in docs/formats.md, and every page there
/// exists, names its schema and stays under 300 lines.
#[test]
fn every_schema_the_sources_name_has_a_page() {
    let (now, older) = formats();
    let mut named = BTreeSet::new();
    let mut dirs = vec![root().join("crates"), root().join("python/profilednn")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() && !matches!(name.as_str(), "tests" | "target" | "__pycache__") {
                dirs.push(p);
            } else if name.ends_with(".rs") || name.ends_with(".py") {
                let text = std::fs::read_to_string(&p).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap();
                for piece in code.split("profilednn.").skip(1) {
                    let n: String = piece
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
                        .collect();
                    let n = n.trim_end_matches('.');
                    let version = n.rsplit_once(".v").map(|(_, v)| v);
                    if version
                        .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    {
                        named.insert((format!("profilednn.{n}"), p.display().to_string()));
                    }
                }
            }
        }
    }
    assert!(named.len() > 10, "{named:?}");
    for (schema, file) in &named {
        assert!(
            now.contains_key(schema) || older.contains_key(schema),
            "{file} names {schema}, which docs/formats.md does not list"
        );
    }
    for (schema, page) in now.iter().chain(&older) {
        let text = std::fs::read_to_string(root().join("docs").join(page))
            .unwrap_or_else(|e| panic!("{schema}: docs/{page}: {e}"));
        assert!(
            text.contains(schema.as_str()),
            "docs/{page} does not name {schema}"
        );
    }
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            let lines = std::fs::read_to_string(&p).unwrap().lines().count();
            assert!(lines <= 300, "{}: {lines} lines (at most 300)", p.display());
        }
    }
}
