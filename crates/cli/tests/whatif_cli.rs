//! What-if replays end to end with real oneDNN: a PyTorch resnet18 training log recorded on
//! this project's machine (`fixtures/whatif`, f32 NCHW), rewritten `--as bf16 --layout
//! channels-last --batch 4` and `--layout channels-last`, replayed and projected. The
//! expectations come from outside the transforms: the model's layer count (resnet18 has 20
//! convolutions, so autocast casts 20 weights and 20 weight gradients per iteration) and the
//! real channels-last run of the same script, whose iteration has as many oneDNN calls as the
//! rewritten one must.
//!
//! Needs `PROFILEDNN_DNNL_LIB` (a libdnnl.so.3); without it the tests say SKIPPED and pass,
//! unless PROFILEDNN_REQUIRE_ONEDNN=1.

mod common;
use common::{bin, dnnl_lib_or_skip as dnnl_lib, failed, json_of, replay_to, root, temp_dir};
use std::io::Read;

fn fixture(name: &str) -> String {
    root()
        .join("fixtures/whatif")
        .join(name)
        .display()
        .to_string()
}

/// oneDNN exec lines between the last two `profilednn,iteration,N` markers of a gzip log,
/// counted here from the text (not by ProfileDNN's parser).
fn exec_lines_of_last_iteration(name: &str) -> usize {
    exec_lines_of_last_iteration_but(name, "\u{0}")
}

/// [`exec_lines_of_last_iteration`] without the lines that contain `except`.
fn exec_lines_of_last_iteration_but(name: &str, except: &str) -> usize {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(name)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let marks: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("profilednn,iteration,"))
        .collect();
    let (a, b) = (marks[marks.len() - 2], marks[marks.len() - 1]);
    lines[a..b]
        .iter()
        .filter(|l| l.contains(",primitive,exec,") && !l.contains(except))
        .count()
}

fn replay(lib: &str, log: &str, out: &std::path::Path, what_if: &[&str]) {
    let mut args = vec!["--threads", "1", "--min-time-ms", "50"];
    args.extend(what_if);
    let (_, o) = replay_to(&[], lib, std::path::Path::new(log), out, &args);
    println!("{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn bf16_channels_last_batch_what_if_replays_and_projects() {
    let Some(lib) = dnnl_lib() else { return };
    let dir = temp_dir();
    let out = dir.join("whatif.json");
    let log = fixture("f32-nchw.log.gz");
    replay(
        &lib,
        &log,
        &out,
        &["--as", "bf16", "--layout", "channels-last", "--batch", "4"],
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let w = &r["what_if"];
    assert_eq!(w["transform"], "--as bf16 --layout channels-last --batch 4");
    // 20 convolutions in resnet18: a weight cast before each forward call, a gradient cast
    // after each backward-weights call.
    assert_eq!(w["added"], 40, "{w}");
    // Without the casts (aten::to in PyTorch), as many oneDNN calls as the real bf16
    // channels-last run makes — but for its matmuls: under autocast PyTorch sends the final
    // linear layer to oneDNN, which the f32 log cannot show.
    let real = exec_lines_of_last_iteration_but("bf16-cl.log.gz", ",matmul,");
    assert_eq!(w["calls"].as_u64().unwrap() - 40, real as u64, "{w}");
    let results = r["results"].as_array().unwrap();
    // Where oneDNN has no bf16 (an AVX2-only CPU), the bf16 problems are not replayed, each
    // saying so; nothing else may be refused.
    let bf16_here = common::onednn_has_bf16(&r);
    let skipped: Vec<_> = results
        .iter()
        .filter(|x| x["skipped"].is_object())
        .filter(|x| {
            bf16_here
                || !x["skipped"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("no bf16 implementation on this CPU")
        })
        .collect();
    assert!(
        skipped.is_empty(),
        "oneDNN rejected rewritten problems: {skipped:?}"
    );
    if !bf16_here {
        println!(
            "SKIPPED: the bf16 convolutions' replay: oneDNN has none at {}",
            r["onednn_isa"]
        );
    }
    for x in results.iter().filter(|x| x["prim_kind"] == "convolution") {
        let key = x["key"].as_str().unwrap();
        assert!(key.contains("mb4_"), "mini-batch 4: {key}");
        assert!(
            key.contains("--dt=bf16") || key.contains("bf16"),
            "bf16: {key}"
        );
        assert!(
            !key.contains("f32"),
            "no f32 tensor left in a convolution: {key}"
        );
    }
    let p = json_of(&["project", &log, "--replay", out.to_str().unwrap(), "--json"]);
    println!("{}", serde_json::to_string_pretty(&p["what_if"]).unwrap());
    assert!(p["logged_onednn_ms"].as_f64().unwrap() > 0.0);
    assert!(p["projected_onednn_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(
        p["what_if"]["transform"],
        "--as bf16 --layout channels-last --batch 4 --threads 1"
    );
    let groups = p["groups"].as_array().unwrap();
    let casts = groups
        .iter()
        .find(|g| g["prop_kind"] == "autocast cast")
        .expect("autocast casts have their own group");
    assert_eq!(casts["logged_ms"], 0.0);
    assert!(
        (p["what_if"]["autocast_casts_ms"].as_f64().unwrap()
            - casts["projected_ms"].as_f64().unwrap())
        .abs()
            < 1e-9
    );
}

#[test]
fn channels_last_what_if_has_the_real_channels_last_runs_calls() {
    let Some(lib) = dnnl_lib() else { return };
    let dir = temp_dir();
    let out = dir.join("cl.json");
    replay(
        &lib,
        &fixture("f32-nchw.log.gz"),
        &out,
        &["--layout", "channels-last"],
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let real = exec_lines_of_last_iteration("f32-cl.log.gz");
    let logged = exec_lines_of_last_iteration("f32-nchw.log.gz");
    println!(
        "calls per iteration: logged NCHW {logged}, rewritten {}, real channels-last {real}",
        r["what_if"]["calls"]
    );
    assert_eq!(r["what_if"]["logged_calls"], logged);
    assert_eq!(r["what_if"]["calls"], real);
}

#[test]
fn what_if_needs_the_sequence_replay_and_a_real_batch() {
    let err = failed(
        bin()
            .args([
                "replay",
                &fixture("f32-nchw.log.gz"),
                "--mode",
                "isolated",
                "--as",
                "bf16",
            ])
            .args(["--dnnl-lib", "/nonexistent/libdnnl.so.3"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("only the sequence replay"), "{err}");
    let err = failed(
        bin()
            .args(["replay", &fixture("f32-nchw.log.gz"), "--batch", "0"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("at least 1"), "{err}");
}

/// A what-if replay projected onto a log it was not made from is refused, as a same-machine
/// replay of another log is (needs no oneDNN: the replay file is written here).
#[test]
fn what_if_replay_of_another_log_is_refused() {
    let dir = temp_dir();
    let replay = dir.join("other.json");
    let record = serde_json::json!({
        "schema": "profilednn.replay.v1", "source": "other.log", "onednn": "3.2", "library": "",
        "cpu": null, "threads": "2", "binding": null, "mode": "sequence", "sequence": null,
        "what_if": {
            "transform": "--as bf16", "what_if": {"precision": "bf16", "layout": "as-logged", "batch": null},
            "assumptions": [], "logged_calls": 1, "calls": 1, "removed": 0, "added": 0,
            "autocast_casts": [], "rewritten_from": {}, "logged_keys": ["--conv of another log"]
        },
        "results": []
    });
    std::fs::write(&replay, record.to_string()).unwrap();
    let err = failed(
        bin()
            .args(["project", &fixture("f32-nchw.log.gz"), "--replay"])
            .arg(&replay)
            .output()
            .unwrap(),
    );
    assert!(
        err.contains("not of this log") && err.contains("0 of the log's"),
        "{err}"
    );
}

/// A results file of another schema (a newer profilednn's) is refused with its schema named;
/// a v1 file's bare skip message is read as v2's `{kind, message}` (the committed replays are
/// v1: `project` reads them, and `replay` writes v2).
#[test]
fn results_files_of_another_schema_are_refused_and_v1_is_migrated() {
    let dir = temp_dir();
    let replay = dir.join("newer.json");
    let record = serde_json::json!({
        "schema": "profilednn.replay.v9", "source": "x.log", "onednn": "3.2", "library": "",
        "cpu": null, "threads": null, "binding": null, "results": []
    });
    std::fs::write(&replay, record.to_string()).unwrap();
    let err = failed(
        bin()
            .args(["project", &fixture("f32-nchw.log.gz"), "--replay"])
            .arg(&replay)
            .output()
            .unwrap(),
    );
    assert!(
        err.contains("newer.json") && err.contains("schema 'profilednn.replay.v9'"),
        "{err}"
    );
    let v1 = r#"{"schema": "profilednn.replay.v1", "source": "x.log", "onednn": "3.2",
        "library": "", "cpu": null, "threads": null, "binding": null, "results": [
        {"key": "k", "prim_kind": "convolution", "prop_kind": "forward_training", "shapes": "",
         "calls": 1, "log_time_ms": 1.0, "log_implementations": [], "measurement": null,
         "implementation_matches": null,
         "skipped": "interrupted before it was replayed (Ctrl-C)"}]}"#;
    let r = profilednn_replay::Replay::from_json(v1).unwrap();
    assert_eq!(r.schema, "profilednn.replay.v2");
    let back = serde_json::to_value(&r).unwrap();
    assert_eq!(back["results"][0]["skipped"]["kind"], "interrupted");
    assert_eq!(
        back["mode"], "isolated",
        "a file without a mode was isolated"
    );
}
