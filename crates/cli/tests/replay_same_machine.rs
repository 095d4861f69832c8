//! Same machine, real oneDNN: a training program compiled here against oneDNN writes a log on
//! this machine; `replay` re-creates its primitives, `project` projects its time, and the
//! projection must come within 20 % of the logged oneDNN time (steady state).
//!
//! Needs oneDNN 3.x with headers (`pip install onednn-cpu-gomp==2023.2.0
//! onednn-devel-cpu-gomp==2023.2.0`) found through PROFILEDNN_DNNL_LIB or a pip prefix, and gcc.
//! Without them the test says so and passes, unless PROFILEDNN_REQUIRE_ONEDNN=1 (set by
//! `.ci/run`, which installs oneDNN). It is the only test of this binary, so no other test
//! competes for the cores while it records and replays.

mod common;
use common::{bin, json_of, root, temp_dir};
use std::path::PathBuf;
use std::process::Command;

fn onednn() -> Option<PathBuf> {
    let mut c = vec![];
    if let Some(p) = std::env::var_os("PROFILEDNN_DNNL_LIB") {
        c.push(PathBuf::from(p));
    }
    if let Ok(out) = Command::new("python3")
        .args([
            "-c",
            "import site,sys; print(sys.prefix); print(site.USER_BASE)",
        ])
        .output()
    {
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            c.push(PathBuf::from(l.trim()).join("lib/libdnnl.so.3"));
        }
    }
    let found = c.into_iter().find(|p| {
        p.exists()
            && p.parent()
                .is_some_and(|d| d.join("../include/oneapi/dnnl/dnnl.h").exists())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("PROFILEDNN_REQUIRE_ONEDNN").is_none(),
            "PROFILEDNN_REQUIRE_ONEDNN is set but oneDNN (library + headers) was not found"
        );
        eprintln!("SKIPPED: oneDNN not found (pip install onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0)");
    }
    found
}

/// Builds and runs the C training program of the corpus with verbose mode on.
fn fresh_log(lib: &std::path::Path, iters: u32) -> PathBuf {
    let dir = temp_dir();
    let libdir = lib.parent().unwrap();
    let exe = dir.join("train_v3");
    let st = Command::new("gcc")
        .arg("-O2")
        .arg(root().join("fixtures/replay/train_v3.c"))
        .arg(format!("-I{}", libdir.join("../include").display()))
        .arg(format!("-L{}", libdir.display()))
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .arg(lib)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed");
    let out = Command::new(&exe)
        .arg(iters.to_string())
        .arg("f32")
        .env("ONEDNN_VERBOSE", "1")
        // One thread for the program and the replay alike: on a shared 2-core machine an
        // OpenMP barrier waiting for a preempted thread would dominate both measurements.
        .env("OMP_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let log = dir.join("train.log");
    std::fs::write(&log, &out.stdout).unwrap();
    log
}

#[test]
fn same_machine_projection_is_within_20_percent() {
    let Some(lib) = onednn() else { return };
    // The log and the replay are measured a few seconds apart; on this shared machine a
    // neighbour can slow one of them down by a quarter for that long (seen once: -21.3 %, the
    // same test otherwise at -1…-3 %). So a miss is measured again once, from a fresh log and a
    // fresh replay; every attempt's error is printed.
    let mut errors = Vec::new();
    for _ in 0..2 {
        let error = projection_error(&lib);
        errors.push(format!("{:+.1}%", error * 100.0));
        if error.abs() < 0.2 {
            return;
        }
    }
    panic!("projection error {}", errors.join(", then "));
}

/// Records the program, replays its primitives, projects: (projected / logged) − 1.
fn projection_error(lib: &std::path::Path) -> f64 {
    let lib = lib.to_path_buf();
    let log = fresh_log(&lib, 300);
    let results = log.with_extension("replay.json");
    let out = bin()
        .args([
            "replay",
            log.to_str().unwrap(),
            "-o",
            results.to_str().unwrap(),
            "--dnnl-lib",
            lib.to_str().unwrap(),
            "--threads",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    let rows = r["results"].as_array().unwrap();
    let replayed: Vec<_> = rows
        .iter()
        .filter(|x| x["measurement"].is_object())
        .collect();
    assert!(
        replayed.len() * 10 >= rows.len() * 8,
        "{} of {} replayed",
        replayed.len(),
        rows.len()
    );
    // Same library, same machine: oneDNN picks the implementation the log shows.
    for x in &replayed {
        assert_eq!(x["implementation_matches"], true, "{}", x["key"]);
    }
    let p = json_of(&[
        "project",
        log.to_str().unwrap(),
        "--replay",
        results.to_str().unwrap(),
        "--json",
    ]);
    let (logged, projected) = (
        p["logged_onednn_ms"].as_f64().unwrap(),
        p["projected_onednn_ms"].as_f64().unwrap(),
    );
    let error = projected / logged - 1.0;
    eprintln!("same-machine projection: logged {logged:.3} ms/iteration, projected {projected:.3}, error {:+.1}%", error * 100.0);
    error
}
