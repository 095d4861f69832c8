//! The heap of a per-call sequence replay end to end, on the PyTorch ResNet-18 log of
//! `fixtures/whatif` (every call with a user scratchpad, so allocated per call): the default is
//! read from the log and says why, `--heap` is obeyed, and the two heaps differ the way they
//! must — counted in page faults (`getrusage` of the replay process), not in time: new pages for
//! every buffer fault each call's scratchpad and gradient copy in, kept ones only once.
//!
//! Needs `PROFILEDNN_DNNL_LIB` (a libdnnl.so.3); without it the test says SKIPPED and passes,
//! unless PROFILEDNN_REQUIRE_ONEDNN=1. One test in this file: the children's page faults are
//! this test's own.

mod common;
use common::{dnnl_lib_or_skip, json_of, replay_to, root, temp_dir};

/// Minor page faults of the children waited for so far.
fn children_faults() -> i64 {
    // SAFETY: getrusage writes the struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut u), 0);
        u.ru_minflt
    }
}

/// Replays the fixture (its 12 most timed problems, 2 threads as logged) with `heap` (`None`:
/// the default), returning the replay JSON and the replay process' page faults.
fn replay(lib: &str, out: &std::path::Path, heap: Option<&str>) -> (serde_json::Value, i64) {
    let log = root().join("fixtures/whatif/f32-nchw.log.gz");
    let before = children_faults();
    let mut args = vec!["--top", "12", "--threads", "2"];
    if let Some(h) = heap {
        args.extend(["--heap", h]);
    }
    let (j, _) = replay_to(&[], lib, &log, out, &args);
    let faults = children_faults() - before;
    (j, faults)
}

#[test]
fn heap_is_read_from_the_log_given_or_not_and_cold_faults_where_warm_does_not() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let dir = temp_dir();
    let (auto, _) = replay(&lib, &dir.join("auto.json"), None);
    let q = &auto["sequence"];
    assert_eq!(q["allocation"], "per-call", "{q}");
    let heap = q["heap"].as_str().expect("a heap for a per-call replay");
    let why = q["heap_reason"].as_str().unwrap();
    // The 512×512×3×3 weight gradient's copy into `.grad` is among the top problems: its
    // destination is allocated per iteration, so the choice has something to read — for the
    // reorders and for the other primitives apart.
    assert!(why.starts_with("as logged: "), "{why}");
    assert!(
        why.contains("reorders (") && why.contains("the other primitives ("),
        "{why}"
    );
    assert!(why.contains("f = "), "{why}");
    // Kept pages, or new pages for the problems of the kinds that showed them (listed, each a
    // problem of the replay); never new pages for every buffer.
    let cold: Vec<&str> = q["cold_problems"]
        .as_array()
        .map(|a| a.iter().filter_map(|k| k.as_str()).collect())
        .unwrap_or_default();
    match heap {
        "warm" => assert!(cold.is_empty(), "{q}"),
        "as-logged" => {
            assert!(!cold.is_empty(), "{q}");
            let keys: Vec<&str> = auto["results"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|r| r["key"].as_str())
                .collect();
            for k in &cold {
                assert!(keys.contains(k), "{k} is not a problem of the replay");
            }
        }
        other => panic!("heap {other} chosen from the log: {q}"),
    }
    let out = dir.join("auto.json");
    let text = json_of(&[
        "project",
        root()
            .join("fixtures/whatif/f32-nchw.log.gz")
            .to_str()
            .unwrap(),
        "--replay",
        out.to_str().unwrap(),
        "--json",
    ]);
    let a = text["replay_allocation"].as_str().unwrap();
    assert!(a.contains(&format!("; heap {heap} (as logged: ")), "{a}");

    let (warm, warm_faults) = replay(&lib, &dir.join("warm.json"), Some("warm"));
    let (cold, cold_faults) = replay(&lib, &dir.join("cold.json"), Some("cold"));
    for (j, h) in [(&warm, "warm"), (&cold, "cold")] {
        assert_eq!(j["sequence"]["heap"], h);
        assert_eq!(j["sequence"]["heap_reason"], "given");
    }
    let iterations = |j: &serde_json::Value| j["sequence"]["iterations"].as_i64().unwrap() + 2;
    let per = |f: i64, j: &serde_json::Value| f / iterations(j);
    println!(
        "page faults per iteration (incl. warm-up ones): warm {} ({} in all), cold {} ({} in all)",
        per(warm_faults, &warm),
        warm_faults,
        per(cold_faults, &cold),
        cold_faults
    );
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if thp.contains("[always]") {
        println!("SKIPPED: the page-fault comparison: transparent huge pages are `always` here (a new 9.4 MB map is a few 2 MiB faults, not 2,304 of 4 KiB)");
        return;
    }
    // The gradient copy's 9.4 MB destination alone is 2,304 pages per iteration, new each time
    // with the cold heap; the warm heap faults it in once.
    assert!(
        per(cold_faults, &cold) > 2_000 + per(warm_faults, &warm),
        "cold {cold_faults}, warm {warm_faults}"
    );
}
