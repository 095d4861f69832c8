//! Primitive kinds and flags of oneDNN newer than the pip CPU wheel (3.2): group normalization
//! (3.3) and RMS normalization (3.9), replayed with a newer library — pip's DPC++ build
//! (`pip install onednn==2026.1.0`, oneDNN 3.13, whose CPU engine runs on the SYCL CPU device)
//! named by `PROFILEDNN_DNNL_LIB_NEW`.
//!
//! The reference is oneDNN itself: with `ONEDNN_VERBOSE=1` the replaying library prints each
//! primitive it ran, and every logged problem (`fixtures/replay/newer_kinds.log`: the corpus'
//! benchdnn lines, RMS ones in f32 so any AVX2 CPU runs them) must come back with the same
//! kind, propagation, tensors, flags and shape. Without the library the test says SKIPPED,
//! unless PROFILEDNN_REQUIRE_ONEDNN is set (`.ci/run` installs both).

mod common;
use common::{bin, root, temp_dir};

/// The fields of an exec line that say which problem ran: kind, propagation, tensors (`a`,
/// "chosen with `any`", dropped: the replay gives the layout the log shows), flags and shape.
fn problem_of(line: &str) -> Option<String> {
    let f: Vec<&str> = line.trim().split(',').collect();
    (f.len() >= 12 && f[0] == "onednn_verbose" && f[3] == "exec").then(|| {
        format!(
            "{} {} {} {} {}",
            f[5],
            f[7],
            f[8].replace(":a:", "::"),
            f[10],
            f[11]
        )
    })
}

#[test]
fn group_and_rms_normalization_replay_as_the_log_shows_them() {
    let Some(lib) = std::env::var_os("PROFILEDNN_DNNL_LIB_NEW") else {
        assert!(
            std::env::var_os("PROFILEDNN_REQUIRE_ONEDNN").is_none(),
            "PROFILEDNN_REQUIRE_ONEDNN is set but PROFILEDNN_DNNL_LIB_NEW (a oneDNN 3.9 or newer) is not"
        );
        eprintln!("SKIPPED: set PROFILEDNN_DNNL_LIB_NEW to a oneDNN 3.9+ libdnnl.so.3 (pip install onednn==2026.1.0)");
        return;
    };
    let log = root().join("fixtures/replay/newer_kinds.log");
    let results = temp_dir().join("newer.replay.json");
    let out = bin()
        .env("ONEDNN_VERBOSE", "1")
        .args([
            "replay",
            log.to_str().unwrap(),
            "-o",
            results.to_str().unwrap(),
        ])
        .arg("--dnnl-lib")
        .arg(&lib)
        .args(["--mode", "isolated", "--no-progress"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    for x in r["results"].as_array().unwrap() {
        assert!(
            x["measurement"].is_object(),
            "{}: {}",
            x["key"],
            x["skipped"]
        );
    }
    let logged: std::collections::BTreeSet<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(problem_of)
        .collect();
    assert_eq!(logged.len(), 6, "the fixture's distinct problems");
    let ran: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(problem_of)
        .collect();
    let missing: Vec<&String> = logged.difference(&ran).collect();
    assert!(
        missing.is_empty(),
        "oneDNN ran no such problem: {missing:#?}\nit ran: {ran:#?}"
    );
    println!(
        "{} problems replayed with {} as logged",
        logged.len(),
        r["onednn"]
    );
}

/// `--threads` cannot set the thread count of a SYCL CPU engine: refused, with what to do.
#[test]
fn threads_are_refused_for_a_sycl_cpu_engine() {
    let Some(lib) = std::env::var_os("PROFILEDNN_DNNL_LIB_NEW") else {
        eprintln!("SKIPPED: PROFILEDNN_DNNL_LIB_NEW is not set");
        return;
    };
    let sycl = std::path::Path::new(&lib)
        .parent()
        .and_then(|d| std::fs::read_dir(d).ok())
        .is_some_and(|mut d| {
            d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libsycl.so")))
        });
    if !sycl {
        eprintln!("SKIPPED: PROFILEDNN_DNNL_LIB_NEW is not a SYCL (DPC++) build");
        return;
    }
    let log = root().join("fixtures/replay/newer_kinds.log");
    let out = bin()
        .args(["replay", log.to_str().unwrap(), "-o"])
        .arg(temp_dir().join("t.json"))
        .arg("--dnnl-lib")
        .arg(&lib)
        .args(["--threads", "1", "--no-progress"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("SYCL") && stderr.contains("onednn-cpu-gomp"),
        "{stderr}"
    );
}
