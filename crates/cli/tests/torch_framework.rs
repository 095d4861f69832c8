//! The whole step's framework ops, costed from the trace's own shapes, on a GPT-style
//! transformer recorded with PyTorch 2.15 (`fixtures/torch/train_transformer.py`, see the
//! fixtures' README): in f32 its Linear layers run in the BLAS and attention in ATen, outside
//! oneDNN.

mod common;
use common::{json_of, root};
use serde_json::Value;
use std::io::Read;

/// `report FIXTURE.log.gz --torch-trace FIXTURE.trace.json.gz [extra] --format json` of a
/// fixture of `fixtures/torch`.
fn torch_report_json(fixture: &str, extra: &[&str]) -> Value {
    let dir = root().join("fixtures/torch");
    let log = dir.join(format!("{fixture}.log.gz")).display().to_string();
    let trace = dir
        .join(format!("{fixture}.trace.json.gz"))
        .display()
        .to_string();
    let mut args = vec!["report", &log, "--torch-trace", &trace];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--format", "json"]);
    json_of(&args)
}

fn trace_json(rel: &str) -> Value {
    let mut text = String::new();
    let file = std::fs::File::open(root().join(rel)).unwrap();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `2·M·K·N` of every `aten::linear` event, read straight from the trace's `Input Dims`
/// (input `[..., K]`, weight `[N, K]`): the independent reference. Under autocast a linear
/// dispatches to `aten::linear` again inside itself: one layer's work, counted once (the
/// outermost event).
fn linear_flops_by_hand(trace: &Value) -> (u64, u64) {
    let (mut flops, mut calls) = (0u64, 0u64);
    let mut linears: Vec<&Value> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "aten::linear" && e["ph"] == "X")
        .collect();
    let at = |e: &Value, k: &str| e[k].as_f64().unwrap();
    linears.sort_by(|a, b| at(a, "ts").total_cmp(&at(b, "ts")));
    let mut outer_end: std::collections::HashMap<String, f64> = Default::default();
    for e in linears {
        let tid = e["tid"].to_string();
        let end = at(e, "ts") + at(e, "dur");
        if outer_end.get(&tid).is_some_and(|&x| at(e, "ts") < x) {
            continue; // inside the previous linear of its thread
        }
        outer_end.insert(tid, end);
        let dims = e["args"]["Input Dims"].as_array().unwrap();
        let x: Vec<u64> = dims[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        let w: Vec<u64> = dims[1]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        let m: u64 = x[..x.len() - 1].iter().product();
        flops += 2 * m * x[x.len() - 1] * w[0];
        calls += 1;
    }
    (flops, calls)
}

fn framework(log: &str, trace: &str) -> Value {
    let log = root().join(log).display().to_string();
    let trace = root().join(trace).display().to_string();
    let r = json_of(&["report", &log, "--torch-trace", &trace, "--format", "json"]);
    r["torch"]["framework"].clone()
}

fn row<'a>(f: &'a Value, name: &str) -> &'a Value {
    common::row_where(&f["rows"], "name", name)
}

#[test]
fn linear_rows_carry_2mkn_over_the_traces_own_shapes_and_most_time_is_costed() {
    for v in ["f32", "bf16"] {
        let trace = format!("fixtures/torch/gpt-{v}.trace.json.gz");
        let (flops, calls) = linear_flops_by_hand(&trace_json(&trace));
        assert!(calls > 0, "{v}: the trace has linear layers");
        let f = framework(&format!("fixtures/torch/gpt-{v}.log.gz"), &trace);
        let linear = row(&f, "aten::linear");
        assert_eq!(linear["flops"].as_u64().unwrap(), flops, "{v}");
        assert_eq!(linear["calls"].as_u64().unwrap(), calls, "{v}");
        assert_eq!(linear["family"], "gemm");
        let share = f["costed_share"].as_f64().unwrap();
        assert!(share >= 0.8, "{v}: {share} of framework-op time costed");
        // Attention's kernels, forward and backward, are costed too.
        assert!(
            row(&f, "aten::scaled_dot_product_attention")["flops"]
                .as_u64()
                .unwrap()
                > 0
        );
        // In f32 the product runs in the BLAS; under bf16 autocast, in oneDNN.
        let expected = if v == "f32" { "BLAS" } else { "oneDNN" };
        assert_eq!(linear["runs_in"], expected, "{v}");
        // Under autocast the linear is recorded with its f32 arguments; its GEMM ran in bf16,
        // the precision (and element size) it is costed and set against a roof at.
        assert_eq!(linear["precision"], v, "{v}");
    }
}

/// A model of Linear layers only: in f32 no GEMM reaches oneDNN, and the framework table still
/// costs them.
#[test]
fn an_mlp_in_f32_is_costed_outside_onednn() {
    let f = framework(
        "fixtures/torch/mlp-f32.log.gz",
        "fixtures/torch/mlp-f32.trace.json.gz",
    );
    let trace = trace_json("fixtures/torch/mlp-f32.trace.json.gz");
    let (flops, _) = linear_flops_by_hand(&trace);
    let linear = row(&f, "aten::linear");
    assert_eq!(linear["flops"].as_u64().unwrap(), flops);
    assert_eq!(linear["runs_in"], "BLAS");
    assert!(f["costed_share"].as_f64().unwrap() >= 0.8);
}

/// A training log with iteration markers and no primitive: the message says why (nothing
/// called oneDNN) and names `--torch`; exit status 1.
#[test]
fn markers_without_primitives_say_nothing_called_onednn_and_name_torch() {
    let dir = common::temp_dir();
    let log = dir.join("no-onednn.log");
    std::fs::write(
        &log,
        "profilednn,iteration,0\nloss 1.0\nprofilednn,iteration,1\nloss 0.9\n",
    )
    .unwrap();
    let out = common::bin()
        .args(["report", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nothing in it called oneDNN"), "{err}");
    assert!(err.contains("profilednn record --torch"), "{err}");
    assert!(!err.contains("ONEDNN_VERBOSE=1"), "{err}");
}

/// A torch.compile run calls no oneDNN here (Inductor generates its element-wise kernels):
/// with its trace, `report` gives the PyTorch view, exit status 0, and no empty oneDNN tables.
#[test]
fn a_compiled_step_without_onednn_is_reported_from_its_trace() {
    let log = root().join("fixtures/torch/gpt-compiled.log.gz");
    let trace = root().join("fixtures/torch/gpt-compiled.trace.json.gz");
    let out = common::bin()
        .args(["report", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "without the trace: nothing to report"
    );
    let out = common::succeeded(
        common::bin()
            .args([
                "report",
                log.to_str().unwrap(),
                "--torch-trace",
                trace.to_str().unwrap(),
            ])
            .output()
            .unwrap(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("No oneDNN primitive ran"), "{text}");
    assert!(!text.contains("By primitive kind"), "{text}");
    assert!(text.contains("Torch-Compiled Region"), "{text}");
    assert!(text.contains("Framework ops' cost"), "{text}");
    // The kernels by name, and the frame the compiled region runs (`profilednn.profile` was
    // given the compiled GPT).
    assert!(text.contains("Inductor kernels"), "{text}");
    assert!(text.contains("graph_0_cpp_fused_"), "{text}");
    assert!(
        text.contains("Torch-Compiled Region: 0/0 GPT.forward"),
        "{text}"
    );
    assert!(text.contains("iteration 0 ("), "{text}");
}

/// The compiled step's iteration 0 is its compilation: it is left out of the per-iteration
/// figures, and the kernels' times are the trace's own durations of the kernel events in the
/// other iterations, summed here straight from the trace.
#[test]
fn a_compiled_steps_compilation_is_set_apart_and_its_kernels_timed() {
    let rel = "fixtures/torch/gpt-compiled.trace.json.gz";
    let t = trace_json(rel);
    let events: Vec<&Value> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    let at = |e: &Value, k: &str| e[k].as_f64().unwrap_or(0.0);
    let iter0 = events
        .iter()
        .find(|e| e["name"] == "profilednn.iteration#0")
        .unwrap();
    let iter0_end = at(iter0, "ts") + at(iter0, "dur");
    let mut by_hand = 0.0;
    let mut names = std::collections::BTreeSet::new();
    for e in &events {
        let name = e["name"].as_str().unwrap_or("");
        if name.starts_with("graph_") && name.contains("_cpp_") && at(e, "ts") >= iter0_end {
            by_hand += at(e, "dur") / 1e3;
            names.insert(name.to_string());
        }
    }
    assert!(!names.is_empty(), "the fixture has no kernel events");
    let r = json_of(&[
        "report",
        root()
            .join("fixtures/torch/gpt-compiled.log.gz")
            .to_str()
            .unwrap(),
        "--torch-trace",
        root().join(rel).to_str().unwrap(),
        "--format",
        "json",
    ]);
    let torch = &r["torch"];
    assert_eq!(torch["compiling"][0]["index"], 0, "{}", torch["compiling"]);
    assert!(torch["compiling"][0]["compile_ms"].as_f64().unwrap() > 1000.0);
    assert_eq!(torch["iterations"], 3);
    assert_eq!(torch["per_iteration"].as_array().unwrap().len(), 4);
    let kernels = torch["framework"]["inductor_kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), names.len());
    let total: f64 = kernels.iter().map(|k| k["time_ms"].as_f64().unwrap()).sum();
    assert!(
        (total - by_hand).abs() < 1e-6 * by_hand.max(1.0),
        "{total} vs {by_hand}"
    );
    let region = torch["framework"]["compiled_region_ms"].as_f64().unwrap();
    assert!(
        total <= region,
        "kernels {total} ms outside their regions' {region} ms"
    );
    assert!(
        torch["ops"].as_array().unwrap().iter().any(|o| o["name"]
            .as_str()
            .unwrap()
            .starts_with("Torch-Compiled Region: 0/0 GPT.forward (train_transformer.py:")),
        "{}",
        torch["ops"]
    );
    // No compile-time op (Dynamo's tracing runs aten ops on fake tensors) is among the ops.
    for op in torch["ops"].as_array().unwrap() {
        let name = op["name"].as_str().unwrap();
        assert!(
            name != "dynamo" && !name.ends_with("(dynamo_timed)"),
            "{name}"
        );
    }
    let fused = kernels
        .iter()
        .find(|k| k["name"].as_str().unwrap().contains("native_layer_norm"))
        .unwrap();
    assert!(
        fused["fused"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o.as_str().unwrap().starts_with("native_layer_norm")),
        "{fused}"
    );
}

/// With a machine profile, every costed op is set against the same roofs as the primitives
/// (the report's `efficiency` peaks): its roof is the slower of compute at its precision's peak
/// and memory at the bandwidth, and what it lost is its time less that, summed in the totals.
#[test]
fn framework_ops_are_set_against_the_machines_roofline() {
    let log = root()
        .join("fixtures/torch/gpt-f32.log.gz")
        .display()
        .to_string();
    let trace = root()
        .join("fixtures/torch/gpt-f32.trace.json.gz")
        .display()
        .to_string();
    let machine = root()
        .join("fixtures/machine/xeon-8480-spec.json")
        .display()
        .to_string();
    let r = json_of(&[
        "report",
        &log,
        "--torch-trace",
        &trace,
        "--machine",
        &machine,
        "--format",
        "json",
    ]);
    let peak = r["efficiency"]["peak_gflops"]["f32"].as_f64().unwrap();
    let memory = r["efficiency"]["memory_gbps"].as_f64().unwrap();
    let f = &r["torch"]["framework"];
    let (mut lost_sum, mut roof_sum) = (0.0, 0.0);
    for row in f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["costed_calls"].as_u64() > Some(0))
    {
        assert_eq!(row["precision"], "f32", "{row}");
        let n = |k: &str| row[k].as_f64().unwrap();
        let roof = ((n("flops") + n("extra_flops")) / peak / 1e6).max(n("bytes") / memory / 1e6);
        let measured = n("time_ms") * n("costed_calls") / n("calls");
        assert!(
            (n("roofline_ms") - roof).abs() < 1e-9 * roof.max(1.0),
            "{row}"
        );
        assert!(
            (n("lost_ms") - (measured - roof).max(0.0)).abs() < 1e-9,
            "{row}"
        );
        lost_sum += n("lost_ms");
        roof_sum += roof;
    }
    let t = &f["roofline"];
    assert!((t["lost_ms"].as_f64().unwrap() - lost_sum).abs() < 1e-6);
    assert!((t["roofline_ms"].as_f64().unwrap() - roof_sum).abs() < 1e-6);
    let e = t["efficiency"].as_f64().unwrap();
    assert!(e > 0.0 && e <= 1.0, "{e}");
}

/// The whole step against the roofline: the step is the trace's own mean iteration (read here
/// from its `profilednn.iteration#N` ranges), the efficiency is both parts' roofline time over
/// it, and its framework part leaves out the ops that ran in oneDNN.
#[test]
fn the_whole_step_is_set_against_the_roofline() {
    let rel = "fixtures/torch/gpt-f32.trace.json.gz";
    let t = trace_json(rel);
    let iters: Vec<f64> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("profilednn.iteration#"))
        })
        .map(|e| e["dur"].as_f64().unwrap() / 1e3)
        .collect();
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let r = torch_report_json("gpt-f32", &["--machine", machine.to_str().unwrap()]);
    let torch = &r["torch"];
    let n = torch["per_iteration"].as_array().unwrap().len();
    // The trailing range (after the last step) is not an iteration: the first `n` are.
    let mut by_hand: Vec<f64> = iters.clone();
    by_hand.truncate(n);
    let step = by_hand.iter().sum::<f64>() / n as f64;
    let w = &torch["whole_step"];
    let f = |v: &Value| v.as_f64().unwrap();
    assert!((f(&w["step_ms"]) - step).abs() < 1e-6 * step, "{w}");
    let roofs = f(&w["onednn"]["roofline_ms"]) + f(&w["framework"]["roofline_ms"]);
    assert!(
        (f(&w["efficiency"]) * step - roofs).abs() < 1e-6 * roofs,
        "{w}"
    );
    let per = torch["iterations"].as_f64().unwrap();
    // The framework rows that did not run in oneDNN (gelu_backward issues eltwise primitives:
    // its work is among the primitives).
    let fw: f64 = torch["framework"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["runs_in"] != "oneDNN")
        .filter_map(|r| r["roofline_ms"].as_f64())
        .sum::<f64>()
        / per;
    let with_onednn = f(&torch["framework"]["roofline"]["roofline_ms"]) / per;
    assert!(fw < with_onednn, "{fw} {with_onednn}");
    assert!(
        (f(&w["framework"]["roofline_ms"]) - fw).abs() < 1e-9 * fw.max(1.0),
        "{w}"
    );
    let parts = f(&w["onednn"]["measured_ms"]) + f(&w["framework"]["measured_ms"]);
    assert!(
        (f(&w["rest_ms"]) - (step - parts).max(0.0)).abs() < 1e-6 * step,
        "{step} {parts} {w}"
    );
    let lost: Vec<f64> = w["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| f(&l["lost_ms"]))
        .collect();
    assert!(
        !lost.is_empty() && lost.windows(2).all(|p| p[0] >= p[1]),
        "{lost:?}"
    );
}

/// Where the step runs: the classes add up to the step's mean wall time (the trace's own
/// iteration ranges), and an f32 transformer's GEMMs are in the BLAS, its element-wise ops in
/// ATen, most of the step outside oneDNN.
#[test]
fn the_step_is_split_by_where_it_runs() {
    let r = torch_report_json("gpt-f32", &[]);
    let torch = &r["torch"];
    let walls: Vec<f64> = torch["per_iteration"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["time_ms"].as_f64().unwrap())
        .collect();
    let step = walls.iter().sum::<f64>() / walls.len() as f64;
    let classes = torch["runs_in"].as_array().unwrap();
    let get = |c: &str| {
        classes
            .iter()
            .find(|r| r["class"] == c)
            .unwrap_or_else(|| panic!("no {c}: {classes:?}"))["time_ms"]
            .as_f64()
            .unwrap()
    };
    let total: f64 = classes.iter().map(|r| r["time_ms"].as_f64().unwrap()).sum();
    assert!((total - step).abs() < 1e-6 * step, "{total} vs {step}");
    assert!(
        get("BLAS") > 0.1 * step && get("ATen") > 0.1 * step,
        "{classes:?}"
    );
    assert!(get("oneDNN") < 0.1 * step, "{classes:?}");
    assert_eq!(get("inductor"), 0.0);
}

/// The framework-op rules on the recorded transformers: an f32 GPT's GEMMs run in the BLAS
/// (gemm-outside-onednn fires, with the time its GEMMs lose against the roofline, derived here
/// from each row's flops and bytes and the report's own roofs), its bf16 run's GEMMs in oneDNN
/// (it does not fire); the compiled run's element-wise ops are Inductor's (elementwise-unfused
/// does not fire).
#[test]
fn framework_op_rules_fire_on_the_recorded_transformers() {
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let m = machine.to_str().unwrap();
    let advise = |fixture: &str| {
        let dir = root().join("fixtures/torch");
        json_of(&[
            "advise",
            dir.join(format!("{fixture}.log.gz")).to_str().unwrap(),
            "--torch-trace",
            dir.join(format!("{fixture}.trace.json.gz"))
                .to_str()
                .unwrap(),
            "--machine",
            m,
            "--format",
            "json",
        ])
    };
    let fired = |a: &Value, id: &str| {
        a["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == id && r["fired"] == true)
    };
    let a = advise("gpt-f32");
    assert!(fired(&a, "gemm-outside-onednn"), "{}", a["rules"]);
    let gemm = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "gemm-outside-onednn")
        .unwrap();
    // By hand, from the report's rows and roofs.
    let r = torch_report_json("gpt-f32", &["--machine", m]);
    let peak = r["efficiency"]["peak_gflops"]["f32"].as_f64().unwrap();
    let bw = r["efficiency"]["memory_gbps"].as_f64().unwrap();
    let per = r["torch"]["iterations"].as_f64().unwrap();
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    let lost: f64 = r["torch"]["framework"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["family"] == "gemm" && row["runs_in"] == "BLAS")
        .map(|row| {
            let roof = ((f(&row["flops"]) + f(&row["extra_flops"])) / peak / 1e6)
                .max(f(&row["bytes"]) / bw / 1e6);
            let measured = f(&row["time_ms"]) * f(&row["costed_calls"]) / f(&row["calls"]);
            (measured - roof).max(0.0)
        })
        .sum::<f64>()
        / per;
    let gain = f(&gemm["gain_ms_per_iteration"]);
    assert!(
        (gain - lost).abs() < 1e-6 * lost,
        "{gain} vs {lost} by hand"
    );
    let a = advise("gpt-bf16");
    assert!(!fired(&a, "gemm-outside-onednn"), "{}", a["rules"]);
    let a = advise("gpt-compiled");
    assert!(!fired(&a, "elementwise-unfused"), "{}", a["rules"]);
}

/// `diff --torch-trace` of the eager GPT against the compiled one, neither log holding a oneDNN
/// primitive worth a diff (the compiled one none at all): the eager GELU is found in the
/// compiled run's kernels whose names (read here from its trace) list `gelu`.
#[test]
fn diff_of_eager_and_compiled_names_the_kernels_ops_moved_into() {
    let dir = root().join("fixtures/torch");
    let p = |f: &str| dir.join(f).display().to_string();
    let d = json_of(&[
        "diff",
        &p("gpt-f32.log.gz"),
        &p("gpt-compiled.log.gz"),
        "--torch-trace",
        &p("gpt-f32.trace.json.gz"),
        &p("gpt-compiled.trace.json.gz"),
        "--format",
        "json",
    ]);
    let t = trace_json("fixtures/torch/gpt-compiled.trace.json.gz");
    let gelu_kernels: std::collections::BTreeSet<String> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.starts_with("graph_") && n.contains("_cpp_fused_") && n.contains("_gelu_"))
        .map(str::to_string)
        .collect();
    assert!(!gelu_kernels.is_empty());
    let moved = d["torch"]["moved"].as_array().unwrap();
    let gelu = moved
        .iter()
        .find(|m| m["name"] == "aten::gelu")
        .unwrap_or_else(|| panic!("{moved:?}"));
    for k in gelu["kernels"].as_array().unwrap() {
        assert!(gelu_kernels.contains(k.as_str().unwrap()), "{k}");
    }
    assert_eq!(gelu["after_ms"], 0.0);
}

/// Convolutions with oneDNN off (`thnn`: `torch.backends.mkldnn` disabled, ATen's
/// `_slow_conv2d`) are costed from the trace's shapes and concrete inputs (stride, padding,
/// groups), with the count the oneDNN model gives the very same convolutions where they ran in
/// oneDNN (`fusedadamw`, the same network and batch: its log's convolution primitives, forward
/// and backward data + weights). The fused AdamW kernel is costed at 14 operations per
/// parameter element, the elements read from the trace's own parameter list.
#[test]
fn convolutions_outside_onednn_and_the_fused_optimizer_are_costed() {
    let thnn = framework(
        "fixtures/torch/thnn.log.gz",
        "fixtures/torch/thnn.trace.json.gz",
    );
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let log = root().join("fixtures/torch/fusedadamw.log.gz");
    let r = json_of(&[
        "report",
        &log.display().to_string(),
        "--machine",
        &machine.display().to_string(),
        "--top",
        "1000",
        "--format",
        "json",
    ]);
    let e = &r["efficiency"];
    assert_eq!(
        e["primitives"].as_array().unwrap().len() as u64,
        e["total_primitives"].as_u64().unwrap()
    );
    let onednn = |prop: &str| -> u64 {
        e["primitives"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["prim_kind"] == "convolution" && p["prop_kind"] == prop)
            .map(|p| p["flops_per_call"].as_u64().unwrap() * p["calls"].as_u64().unwrap())
            .sum()
    };
    let forward = row(&thnn, "aten::conv2d");
    assert_eq!(forward["runs_in"], "ATen");
    assert_eq!(forward["family"], "convolution");
    assert_eq!(
        forward["flops"].as_u64().unwrap(),
        onednn("forward_training")
    );
    let backward = row(&thnn, "aten::convolution_backward");
    assert_eq!(backward["runs_in"], "ATen");
    assert_eq!(
        backward["flops"].as_u64().unwrap(),
        onednn("backward_data") + onednn("backward_weights")
    );
    assert!(thnn["costed_share"].as_f64().unwrap() >= 0.8);
    // Where they ran in oneDNN, the same ops say so.
    let fused = framework(
        "fixtures/torch/fusedadamw.log.gz",
        "fixtures/torch/fusedadamw.trace.json.gz",
    );
    assert_eq!(row(&fused, "aten::conv2d")["runs_in"], "oneDNN");
    // AdamW: Σ parameter elements over the calls, by hand from the trace.
    let trace = trace_json("fixtures/torch/fusedadamw.trace.json.gz");
    let mut elements = 0u64;
    let mut calls = 0u64;
    for ev in trace["traceEvents"].as_array().unwrap() {
        if ev["name"] == "aten::_fused_adamw_" && ev["ph"] == "X" {
            calls += 1;
            for shape in ev["args"]["Input Dims"][0].as_array().unwrap() {
                elements += shape
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap())
                    .product::<u64>();
            }
        }
    }
    assert!(calls > 0 && elements > 0);
    let adamw = row(&fused, "aten::_fused_adamw_");
    assert_eq!(adamw["flops"].as_u64().unwrap(), 14 * elements);
    assert_eq!(adamw["bytes"].as_u64().unwrap(), 7 * 4 * elements);
    assert_eq!(adamw["runs_in"], "ATen");
}
