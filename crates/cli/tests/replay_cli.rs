//! End-to-end: replay's error path, roofline projection, benchdnn export. The same-machine
//! replay test with real oneDNN is alone in `replay_same_machine.rs`, so that no other test
//! competes for the cores while it records and replays.

mod common;
use common::{bin, json_of, root, temp_dir};

#[test]
fn a_missing_onednn_is_one_clear_line() {
    let log = root().join("fixtures/corpus/onednn/v3_2_pypi/train_f32.level1.log");
    let out = bin()
        .args([
            "replay",
            log.to_str().unwrap(),
            "--dnnl-lib",
            "/nonexistent/libdnnl.so.3",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("pip install onednn-cpu-gomp"), "{err}");
}

#[test]
fn roofline_projection_is_a_lower_bound() {
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let p = json_of(&[
        "project",
        log.to_str().unwrap(),
        "--machine",
        machine.to_str().unwrap(),
        "--json",
    ]);
    assert!(p["projected_onednn_ms"].as_f64().unwrap() < p["logged_onednn_ms"].as_f64().unwrap());
    assert!(p["coverage"]["roofline"].as_f64().unwrap() > 0.99);
    assert_eq!(p["scale"], "per_iteration");
}

#[test]
fn benchdnn_batch_files_keep_every_call() {
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let dir = temp_dir().join("bd");
    bin()
        .args([
            "benchdnn",
            log.to_str().unwrap(),
            "-o",
            dir.to_str().unwrap(),
        ])
        .assert()
        .success();
    let mut calls = 0u64;
    for f in std::fs::read_dir(&dir).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "batch") {
            for l in std::fs::read_to_string(&f).unwrap().lines() {
                if let Some(rest) = l.strip_prefix("# calls=") {
                    calls += rest
                        .split_whitespace()
                        .next()
                        .unwrap()
                        .parse::<u64>()
                        .unwrap();
                }
            }
        }
    }
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--no-advice",
    ]);
    assert_eq!(
        calls,
        j["calls"].as_u64().unwrap(),
        "weights add up to the log's executions"
    );
    assert!(dir.join("run.sh").exists());
}

/// `replay --top 1` with real oneDNN ($PROFILEDNN_DNNL_LIB; skipped without it): the coverage
/// line counts every problem of the log and divides by the whole log's oneDNN time.
#[test]
fn replay_top_coverage_is_of_the_whole_log_with_onednn() {
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let log = root().join("fixtures/corpus/onednn/v3_2_pypi/train_f32.level1.log");
    let out_json = temp_dir().join("replay.json");
    let (replay, out) = common::replay_to(
        &[],
        &lib,
        &log,
        &out_json,
        &[
            &common::ONE_ISOLATED_RUN[..],
            &["--top", "1", "--threads", "1"],
        ]
        .concat(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let results = replay["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let replayed = results[0]["log_time_ms"].as_f64().unwrap();
    let report = json_of(&["report", log.to_str().unwrap(), "--format", "json"]);
    let total = report["total_time_ms"].as_f64().unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("Replayed 1 of "), "{first}");
    let problems: usize = first["Replayed 1 of ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(problems > 10, "{first}");
    let expected = format!(
        "{:.1}% of the log's oneDNN time ({replayed:.1} of {total:.1} ms)",
        replayed / total * 100.0
    );
    assert!(first.ends_with(&expected), "{first}\nexpected …{expected}");
}

/// Issue 17: `replay` interrupted with Ctrl-C writes the results measured so far and says so
/// (exit status 130); the problems left are listed as interrupted. Real oneDNN
/// ($PROFILEDNN_DNNL_LIB; skipped without it).
#[test]
fn replay_interrupted_by_ctrl_c_writes_what_it_measured() {
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let log = root().join("fixtures/corpus/onednn/v3_2_pypi/train_f32.level1.log");
    let out_json = temp_dir().join("interrupted.json");
    // Each problem would be timed for 100 s: only Ctrl-C ends this run early.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_profilednn"))
        .args(["replay", log.to_str().unwrap(), "--mode", "isolated"])
        .args(["--min-runs", "100000000", "--max-runs", "1000000000"])
        .args(["--min-time-ms", "100000", "--threads", "1", "--no-progress"])
        .arg("--dnnl-lib")
        .arg(&lib)
        .arg("-o")
        .arg(&out_json)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    // SAFETY: a plain libc call with valid arguments (no memory is passed).
    unsafe { libc_kill(child.id() as i32, 2) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted (Ctrl-C)"), "{err}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    let rows = j["results"].as_array().unwrap();
    let measured = rows.iter().filter(|r| r["measurement"].is_object()).count();
    let interrupted = rows
        .iter()
        .filter(|r| r["skipped"]["kind"] == "interrupted")
        .count();
    assert!(measured >= 1, "the problem being timed keeps its runs");
    assert!(interrupted >= 1 && measured + interrupted <= rows.len());
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// The sequence replay reads the log twice: from stdin it says so instead of replaying an
/// empty iteration (needs no oneDNN: the check comes first).
#[test]
fn sequence_replay_of_stdin_asks_for_a_file() {
    let out = bin()
        .args(["replay", "-", "--dnnl-lib", "/nonexistent/libdnnl.so.3"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a file") && err.contains("--mode isolated"),
        "{err}"
    );
}
