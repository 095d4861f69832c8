//! End-to-end: `diff --torch-trace` of an eager run against its compiled twin, both without a
//! timestamped oneDNN line in common (gpt-f32 against gpt-compiled): the whole step headlined
//! from the traces, the compile warm-up and its payback, and the fused ops against the kernels
//! that took them over. Every figure is derived here straight from the traces' events.

mod common;
use common::{json_of, repo, root};
use serde_json::Value;
use std::io::Read;

fn trace_events(rel: &str) -> Vec<Value> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(root().join(rel)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let t: Value = serde_json::from_str(&text).unwrap();
    t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .cloned()
        .collect()
}

/// (start µs, wall ms) of `profilednn.iteration#i`, i < 4 (the log's 4 iterations; the range
/// the last `step()` opens is not one).
fn iterations(events: &[Value]) -> Vec<(f64, f64)> {
    (0..4)
        .map(|i| {
            let e = events
                .iter()
                .find(|e| e["name"] == format!("profilednn.iteration#{i}"))
                .unwrap();
            (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap() / 1e3)
        })
        .collect()
}

/// BEFORE's and AFTER's logs, then their traces, under fixtures/torch (diff's argument order).
fn pair(before: &str, after: &str) -> Vec<String> {
    let f = |n: String| repo(&format!("fixtures/torch/{n}"));
    vec![
        f(format!("{before}.log.gz")),
        f(format!("{after}.log.gz")),
        f(format!("{before}.trace.json.gz")),
        f(format!("{after}.trace.json.gz")),
    ]
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1e-9)
}

/// Hand-computed from the traces: eager iterations 81.180, 28.013, 28.802, 25.833 ms;
/// compiled 3204.613 (compiling), 19.232, 17.983, 17.928 ms. With the first 2 of 4 left out as
/// warm-up (as for a log's markers), the steps are (28.802 + 25.833) / 2 = 27.317 ms and
/// (17.983 + 17.928) / 2 = 17.956 ms: 1.52x faster. Compiling cost 3204.613 − 17.956 =
/// 3186.66 ms; at 9.362 ms saved per step, 341 steps to pay it back. The kernels ran
/// 1.036 + 0.970 + 0.919 = 0.975 ms per steady iteration.
#[test]
fn eager_against_compiled_traces_headlines_the_step_and_the_compile() {
    let p = pair("gpt-f32", "gpt-compiled");
    let p: Vec<&str> = p.iter().map(String::as_str).collect();
    let eager = iterations(&trace_events("fixtures/torch/gpt-f32.trace.json.gz"));
    let events = trace_events("fixtures/torch/gpt-compiled.trace.json.gz");
    let compiled = iterations(&events);
    let before = (eager[2].1 + eager[3].1) / 2.0;
    let after = (compiled[2].1 + compiled[3].1) / 2.0;
    assert!(close(before, 27.317, 1e-4) && close(after, 17.956, 1e-4));
    let compile = compiled[0].1 - after;
    let steps = (compile / (before - after)).ceil() as u64;
    assert_eq!(steps, 341);
    let iter0_end = compiled[0].0 + compiled[0].1 * 1e3;
    let kernels_ms: f64 = events
        .iter()
        .filter(|e| {
            let name = e["name"].as_str().unwrap_or("");
            name.starts_with("graph_") && name.contains("_cpp_fused_")
        })
        .filter(|e| e["ts"].as_f64().unwrap() >= iter0_end)
        .map(|e| e["dur"].as_f64().unwrap() / 1e3)
        .sum::<f64>()
        / 3.0;
    assert!(close(kernels_ms, 0.975, 2e-3), "{kernels_ms}");

    let j = json_of(&[
        "diff",
        p[0],
        p[1],
        "--torch-trace",
        p[2],
        p[3],
        "--format",
        "json",
    ]);
    let step = &j["step"];
    assert_eq!(step["from"], "trace", "{j:#}");
    assert_eq!(step["before"]["iterations"], 2);
    assert!(close(
        step["before"]["wall_ms"].as_f64().unwrap(),
        before,
        1e-6
    ));
    assert!(close(
        step["after"]["wall_ms"].as_f64().unwrap(),
        after,
        1e-6
    ));
    assert!(close(
        step["speedup"].as_f64().unwrap(),
        before / after,
        1e-6
    ));
    let t = &j["torch"];
    let w = &t["warm_up"];
    assert_eq!(w["iterations"], serde_json::json!([0]));
    assert!(close(
        w["first_step_ms"].as_f64().unwrap(),
        compiled[0].1,
        1e-6
    ));
    assert!(close(w["compile_ms"].as_f64().unwrap(), compile, 1e-6));
    assert_eq!(t["payback"]["steps"], steps);
    // Every fused op's eager time is shared among its kernels, none counted twice; the
    // kernels' time is theirs, as the trace times them.
    let fused = &t["fused"];
    let rows = fused["kernels"].as_array().unwrap();
    let shared: f64 = rows.iter().map(|r| r["eager_ms"].as_f64().unwrap()).sum();
    let moved: f64 = t["moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["before_ms"].as_f64().unwrap())
        .sum();
    assert!(close(shared, moved, 1e-9) && close(fused["eager_ms"].as_f64().unwrap(), moved, 1e-9));
    assert!(close(
        fused["kernel_ms"].as_f64().unwrap(),
        kernels_ms,
        1e-6
    ));
    let gelu = rows
        .iter()
        .find(|r| r["kernel"] == "graph_0_cpp_fused__unsafe_view_gelu_2")
        .unwrap();
    let gelu_by_hand: f64 = events
        .iter()
        .filter(|e| e["name"] == "graph_0_cpp_fused__unsafe_view_gelu_2")
        .filter(|e| e["ts"].as_f64().unwrap() >= iter0_end)
        .map(|e| e["dur"].as_f64().unwrap() / 1e3)
        .sum::<f64>()
        / 3.0;
    assert!(close(
        gelu["kernel_ms"].as_f64().unwrap(),
        gelu_by_hand,
        1e-6
    ));
    assert_eq!(gelu["ops"], serde_json::json!(["aten::gelu"]));

    let text = common::stdout_of(&["diff", p[0], p[1], "--torch-trace", p[2], p[3]]);
    assert!(
        text.contains(
            "Training step (wall clock, median of 2 vs 2 steady iterations of the traces): \
             27.317 ms → 17.956 ms (1.52x faster)"
        ),
        "{text}"
    );
    assert!(
        text.contains("first step 3.2 s, of which compiling ≈ 3.2 s"),
        "{text}"
    );
    assert!(
        text.contains("at the measured saving of 9.362 ms per step it pays back after 341 steps"),
        "{text}"
    );
    assert!(
        text.contains("ms of eager ops → 0.975 ms in 13 kernels"),
        "{text}"
    );
    // No fused op shown as if it became free.
    assert!(!text.contains("→ 0.000      into"), "{text}");
}

/// `report --torch-trace` of the compiled run alone gives its warm-up: by hand (above), the
/// first step 3204.613 ms, compiling ≈ 3204.613 − 17.956 = 3186.66 ms.
#[test]
fn a_compiled_runs_report_gives_its_compile_warm_up() {
    let log = root().join("fixtures/torch/gpt-compiled.log.gz");
    let rel = "fixtures/torch/gpt-compiled.trace.json.gz";
    let compiled = iterations(&trace_events(rel));
    let steady = (compiled[2].1 + compiled[3].1) / 2.0;
    let trace = root().join(rel);
    let (l, t) = (log.to_str().unwrap(), trace.to_str().unwrap());
    let j = json_of(&["report", l, "--torch-trace", t, "--format", "json"]);
    let w = &j["torch"]["warm_up"];
    assert!(close(
        w["first_step_ms"].as_f64().unwrap(),
        compiled[0].1,
        1e-6
    ));
    assert!(close(w["steady_step_ms"].as_f64().unwrap(), steady, 1e-6));
    assert!(close(
        w["compile_ms"].as_f64().unwrap(),
        compiled[0].1 - steady,
        1e-6
    ));
    assert!(close(w["compile_ms"].as_f64().unwrap(), 3186.66, 1e-5));
    let text = common::stdout_of(&["report", l, "--torch-trace", t]);
    assert!(
        text.contains("compile warm-up: first step 3.2 s, of which compiling ≈ 3.2 s"),
        "{text}"
    );
}

/// gpt-f32 was profiled with Python stacks (`python_function` events in its trace), gpt-compiled
/// without: the diff says the two steps are not like with like, in the terminal and the JSON.
#[test]
fn runs_profiled_differently_are_said_to_be_unlike() {
    let stacks = |rel: &str| {
        trace_events(rel)
            .iter()
            .any(|e| e["cat"] == "python_function")
    };
    let (before, after) = (
        stacks("fixtures/torch/gpt-f32.trace.json.gz"),
        stacks("fixtures/torch/gpt-compiled.trace.json.gz"),
    );
    assert!(before && !after);
    let p = pair("gpt-f32", "gpt-compiled");
    let p: Vec<&str> = p.iter().map(String::as_str).collect();
    let diff = ["diff", p[0], p[1], "--torch-trace", p[2], p[3]];
    let j = json_of(&[&diff[..], &["--format", "json"]].concat());
    assert_eq!(
        j["torch"]["python_stacks"],
        serde_json::json!([before, after])
    );
    let text = common::stdout_of(&diff);
    assert!(
        text.contains("not like with like: the first run was profiled with Python stacks"),
        "{text}"
    );
    // The BERT pair, both recorded without them, is not flagged.
    let b = pair("bert-eager", "bert-compiled");
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let text = common::stdout_of(&["diff", b[0], b[1], "--torch-trace", b[2], b[3]]);
    assert!(!text.contains("not like with like"), "{text}");
}
