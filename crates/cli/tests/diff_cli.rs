//! End-to-end: `profilednn diff` on real logs, on a log against itself, and across batch sizes.

mod common;
use common::{gunzip, json_of, root, temp_dir};
use std::io::{Read, Write};

#[test]
fn a_log_against_itself_changes_nothing() {
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let l = log.to_str().unwrap();
    let d = json_of(&["diff", l, l, "--format", "json"]);
    assert_eq!(d["schema"], "profilednn.diff.v1");
    assert_eq!(d["appeared_total"], 0);
    assert_eq!(d["disappeared_total"], 0);
    assert_eq!(d["speedup"].as_f64(), Some(1.0));
    assert!(d["implementation_changes"].as_array().unwrap().is_empty());
    assert!(d["call_changes"].as_array().unwrap().is_empty());
}

#[test]
fn fp32_against_bf16_totals_match_each_report() {
    let (b, a) = (
        root().join("fixtures/corpus/pytorch/resnet50_fp32.log.gz"),
        root().join("fixtures/corpus/pytorch/resnet50_bf16_cl.log.gz"),
    );
    let (b, a) = (b.to_str().unwrap(), a.to_str().unwrap());
    let d = json_of(&["diff", b, a, "--format", "json"]);
    let rb = json_of(&["report", b, "--format", "json", "--no-advice"]);
    let ra = json_of(&["report", a, "--format", "json", "--no-advice"]);
    assert_eq!(d["scale"], "per_iteration");
    let close = |x: &serde_json::Value, y: &serde_json::Value| {
        (x.as_f64().unwrap() - y.as_f64().unwrap()).abs() < 1e-6
    };
    assert!(close(&d["before_time_ms"], &rb["time_ms_per_iteration"]));
    assert!(close(&d["after_time_ms"], &ra["time_ms_per_iteration"]));
    // Different data types: exact identity matches little; --ignore-dtype matches by problem.
    let loose = json_of(&["diff", b, a, "--format", "json", "--ignore-dtype"]);
    assert!(loose["matched"].as_u64() > d["matched"].as_u64());
    // The reorder group equals the reorder row of each report's kind table, per iteration.
    let reorder = |r: &serde_json::Value| {
        r["breakdowns"]["prim_kind"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["prim_kind"] == "reorder")
            .map(|row| row["time_ms_per_iteration"].as_f64().unwrap())
            .unwrap_or(0.0)
    };
    let g = d["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["prim_kind"] == "reorder")
        .unwrap();
    assert!((g["before"]["time_ms"].as_f64().unwrap() - reorder(&rb)).abs() < 1e-6);
    assert!((g["after"]["time_ms"].as_f64().unwrap() - reorder(&ra)).abs() < 1e-6);
}

#[test]
fn a_changed_batch_size_matches_only_when_asked() {
    // The same log at minibatch 16 instead of 8: desc-style `mb8` and dims-style leading 8.
    let text = gunzip(&root().join("fixtures/corpus/pytorch/resnet50_bf16_cl.log.gz"));
    let rebatched: String = text
        .lines()
        .map(|l| {
            let mut f: Vec<String> = l.split(',').map(String::from).collect();
            if l.starts_with("onednn_verbose,v1,primitive,exec") && f.len() > 3 {
                let n = f.len();
                f[n - 2] = f[n - 2]
                    .replace("mb8", "mb16")
                    .split(':')
                    .map(|t| match t.strip_prefix("8x") {
                        Some(rest) => format!("16x{rest}"),
                        None => t.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(":");
            }
            f.join(",") + "\n"
        })
        .collect();
    let dir = temp_dir();
    let after = dir.join("mb16.log");
    std::fs::File::create(&after)
        .unwrap()
        .write_all(rebatched.as_bytes())
        .unwrap();
    let before = root().join("fixtures/corpus/pytorch/resnet50_bf16_cl.log.gz");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "diff",
            before.to_str().unwrap(),
            after.to_str().unwrap(),
            "--format",
            "json",
        ];
        v.extend_from_slice(extra);
        json_of(&v)
    };
    let strict = args(&[]);
    let tolerant = args(&["--ignore-batch"]);
    assert!(strict["appeared_total"].as_u64().unwrap() > 10);
    assert_eq!(tolerant["appeared_total"], 0, "{}", tolerant["appeared"]);
    assert_eq!(tolerant["disappeared_total"], 0);
    assert_eq!(tolerant["speedup"].as_f64(), Some(1.0));
}

#[test]
fn diff_with_pytorch_traces_compares_phases() {
    let f = |n: &str| root().join("fixtures/torch").join(n);
    let (b, a, tb, ta) = (
        f("reference.log.gz"),
        f("fused.log.gz"),
        f("reference.trace.json.gz"),
        f("fused.trace.json.gz"),
    );
    let j = json_of(&[
        "diff",
        b.to_str().unwrap(),
        a.to_str().unwrap(),
        "--torch-trace",
        tb.to_str().unwrap(),
        ta.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let phase = |side: &str, name: &str| {
        j["torch"][side]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["calls"].as_u64().unwrap())
            .unwrap_or(0)
    };
    // The fused optimizer runs far fewer ops than the for-loop one.
    assert!(phase("after", "optimizer") * 2 < phase("before", "optimizer"));
    let out = common::bin()
        .args([
            "diff",
            b.to_str().unwrap(),
            a.to_str().unwrap(),
            "--torch-trace",
            tb.to_str().unwrap(),
            ta.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PyTorch view, per iteration") && text.contains("_FocalLoss"),
        "{text}"
    );
}

/// Three reorders; after, two of them changed implementation and ran twice: cut to `--top 1`,
/// each section still says how many rows it has in all.
#[test]
fn diff_counts_are_of_all_rows_not_of_top() {
    let dir = temp_dir();
    let line = |imp: &str, shape: &str, ms: &str| {
        format!("onednn_verbose,v1,primitive,exec,cpu,reorder,{imp},undef,src:f32::blocked:a::f0 dst:f32::blocked:a::f0,,,{shape},{ms}\n")
    };
    let before = dir.join("before.log");
    let after = dir.join("after.log");
    std::fs::write(
        &before,
        line("jit:uni", "128", "0.5") + &line("jit:uni", "256", "1") + &line("jit:uni", "512", "2"),
    )
    .unwrap();
    std::fs::write(
        &after,
        line("simple:any", "128", "0.5").repeat(2)
            + &line("simple:any", "256", "1").repeat(2)
            + &line("jit:uni", "512", "2"),
    )
    .unwrap();
    let (b, a) = (before.to_str().unwrap(), after.to_str().unwrap());
    let d = json_of(&["diff", b, a, "--top", "1", "--format", "json"]);
    assert_eq!(d["changes"].as_array().unwrap().len(), 1);
    assert_eq!(d["changes_total"], 3);
    assert_eq!(d["implementation_changes"].as_array().unwrap().len(), 1);
    assert_eq!(d["implementation_changes_total"], 2);
    assert_eq!(d["call_changes"].as_array().unwrap().len(), 1);
    assert_eq!(d["call_changes_total"], 2);
    let out = common::bin()
        .args(["diff", b, a, "--top", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Largest changes of matched primitives (1 of 3)"),
        "{text}"
    );
    assert!(text.contains("Implementation changed (1 of 2)"), "{text}");
    assert!(text.contains("Call count changed (1 of 2)"), "{text}");
}

/// `diff --iterations 3,5`, as its `--help` shows it: 3 iterations before, 5 after.
#[test]
fn diff_iterations_accepts_what_its_help_shows() {
    let out = common::bin().args(["diff", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--iterations 3,5"), "{help}");
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let l = log.to_str().unwrap();
    let d = json_of(&["diff", l, l, "--iterations", "3,5", "--format", "json"]);
    assert_eq!(d["before_iterations"], 3);
    assert_eq!(d["after_iterations"], 5);
    assert_eq!(d["scale"], "per_iteration");
    let out = common::bin()
        .args(["diff", l, l, "--iterations", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("BEFORE,AFTER"));
}

/// A log against itself: every ratio is exactly 1, which is "no change", not "1.00x faster".
#[test]
fn identical_logs_diff_says_no_change() {
    let log = root().join("fixtures/torch/fused.log.gz");
    let l = log.to_str().unwrap();
    let out = common::bin().args(["diff", l, l]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("faster") && !text.contains("slower"),
        "{text}"
    );
    assert!(text.contains("(no change)"), "{text}");
}

/// Both logs have markers and timestamps: the headline is the wall-clock step (what the user
/// waits for), with oneDNN's time second. Checked against the logs' own lines: 3 iterations,
/// the first a warm-up, the last ended by no primitive: the step is the span from the first
/// timestamp after marker 1 to the first after marker 2.
#[test]
fn the_headline_is_the_wall_clock_step_when_both_logs_have_it() {
    let step_by_hand = |rel: &str| {
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(root().join(rel)).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        let mut firsts: Vec<Option<f64>> = Vec::new();
        for l in text.lines() {
            if l.starts_with("profilednn,iteration") {
                firsts.push(None);
            } else if let (Some(last), Some(rest)) =
                (firsts.last_mut(), l.strip_prefix("onednn_verbose,v1,"))
            {
                if last.is_none() {
                    *last = rest.split(',').next().and_then(|t| t.parse().ok());
                }
            }
        }
        // profilednn.profile marks the next iteration before it knows there is none: a last
        // marker with no primitive after it.
        assert_eq!(firsts.len(), 4, "{rel}");
        assert_eq!(firsts[3], None, "{rel}");
        firsts[2].unwrap() - firsts[1].unwrap()
    };
    let (b, a) = (
        "fixtures/torch/retinanet-reference.log.gz",
        "fixtures/torch/retinanet-fused.log.gz",
    );
    let d = json_of(&[
        "diff",
        root().join(b).to_str().unwrap(),
        root().join(a).to_str().unwrap(),
        "--ignore-dtype",
        "--format",
        "json",
    ]);
    let (wb, wa) = (step_by_hand(b), step_by_hand(a));
    assert!(
        (d["step"]["before"]["wall_ms"].as_f64().unwrap() - wb).abs() < 1e-6,
        "{}",
        d["step"]
    );
    assert!((d["step"]["after"]["wall_ms"].as_f64().unwrap() - wa).abs() < 1e-6);
    assert!((d["step"]["speedup"].as_f64().unwrap() - wb / wa).abs() < 1e-9);
    let out = common::bin()
        .args([
            "diff",
            root().join(b).to_str().unwrap(),
            root().join(a).to_str().unwrap(),
            "--ignore-dtype",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let step = text
        .find("Training step (wall clock")
        .expect("a step headline");
    assert!(step < text.find("oneDNN time:").unwrap(), "{text}");
}
