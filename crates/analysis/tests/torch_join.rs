//! The PyTorch join on real runs (fixtures/torch: torch.profiler traces and oneDNN logs
//! recorded together), checked against structure known independently of the join.

use profilednn_analysis::torch_join::join;
use profilednn_torchtrace::read_trace;
use profilednn_verbose::LogInput;
use std::io::Read;
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/torch")
        .join(rel)
}

fn raw_trace(rel: &str) -> serde_json::Value {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(fixture(rel)).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    serde_json::from_str(&s).unwrap()
}

#[test]
fn every_primitive_lands_in_the_op_that_issued_it() {
    for v in ["reference", "fused", "bn"] {
        let t = read_trace(&fixture(&format!("{v}.trace.json.gz"))).unwrap();
        let j = join(
            &t,
            LogInput::open(&fixture(&format!("{v}.log.gz"))).unwrap(),
        );
        assert_eq!(j.unattributed_calls, 0, "{v}");
        assert!(j.attributed_calls > 500, "{v}");
        for (kind, op, n) in &j.issued {
            if kind == "convolution" {
                assert!(op.contains("conv"), "{v}: {n} convolutions inside {op}");
            }
        }
        assert_eq!(j.iterations, Some(4));
    }
}

#[test]
fn phases_agree_with_the_traces_own_annotations() {
    for v in ["reference", "retinanet-reference", "retinanet-fused"] {
        phases_agree(v);
    }
}

fn phases_agree(v: &str) {
    let t = read_trace(&fixture(&format!("{v}.trace.json.gz"))).unwrap();
    let j = join(
        &t,
        LogInput::open(&fixture(&format!("{v}.log.gz"))).unwrap(),
    );
    // The trace's own op totals inside the "loss" annotations, from the raw JSON: cpu ops that
    // start inside a loss annotation and are not nested in another such op.
    let raw = raw_trace(&format!("{v}.trace.json.gz"));
    let ev = raw["traceEvents"].as_array().unwrap();
    let span = |e: &serde_json::Value| {
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    let losses: Vec<(f64, f64)> = ev
        .iter()
        .filter(|e| e["cat"] == "user_annotation" && e["name"] == "loss")
        .map(span)
        .collect();
    let inside: Vec<(f64, f64)> = ev
        .iter()
        .filter(|e| e["cat"] == "cpu_op" && e["ph"] == "X")
        .map(span)
        .filter(|(s, _)| losses.iter().any(|(a, b)| a <= s && s < b))
        .collect();
    let top: f64 = inside
        .iter()
        .filter(|(s, e)| {
            !inside
                .iter()
                .any(|(s2, e2)| (s2 < s && e <= e2) || (s2 <= s && e < e2))
        })
        .map(|(s, e)| (e - s) / 1e3)
        .sum();
    let loss = j.phases.iter().find(|p| p.name == "loss").unwrap().time_ms;
    assert!(
        (loss - top).abs() < 1e-6 * top,
        "loss phase {loss} ms vs the trace's top-level ops {top} ms"
    );
    let ann: f64 = losses.iter().map(|(a, b)| (b - a) / 1e3).sum();
    assert!(loss <= ann, "ops inside the annotations cannot exceed them");
    // Every top-level op's time is counted once: phases sum to the ops' total.
    let ops: f64 = j.ops.iter().map(|o| o.time_ms).sum();
    let phases: f64 = j.phases.iter().map(|o| o.time_ms).sum();
    assert!((ops - phases).abs() < 1e-6 * ops);
    // oneDNN time attributed equals the log's execution time.
    let logged: f64 = j.phases.iter().map(|o| o.onednn_ms).sum();
    assert!((logged - j.attributed_ms).abs() < 1e-6 * logged.max(1.0));
}

#[test]
fn the_reader_streams_and_finds_the_base_anywhere() {
    let dir = std::env::temp_dir().join(format!("pdnn-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.json");
    std::fs::write(
        &p,
        r#"{"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::a{b}\"c", "pid": 1, "tid": 7, "ts": 10.0, "dur": 5.0, "args": {"x": [1, {"y": "}"}]}},
  {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 11.0},
  {"ph": "X", "cat": "user_annotation", "name": "loss", "tid": 7, "ts": 9.0, "dur": 8.0}
], "baseTimeNanoseconds": 1000000000000}"#,
    )
    .unwrap();
    let t = read_trace(&p).unwrap();
    assert_eq!(t.ops.len(), 2);
    assert_eq!(t.base_ns, Some(1e12));
    let a = t.ops.iter().find(|o| !o.annotation).unwrap();
    assert_eq!(a.name, "aten::a{b}\"c");
    assert_eq!((a.start, a.end), (10.0, 15.0));
}

#[test]
fn forward_convolutions_land_in_conv2d_modules() {
    let t = read_trace(&fixture("reference.trace.json.gz")).unwrap();
    let j = join(&t, LogInput::open(&fixture("reference.log.gz")).unwrap());
    assert!(
        !j.modules.is_empty(),
        "the trace was recorded with Python stacks"
    );
    // The model's top module contains all its forward primitives.
    let forward = j.phases.iter().find(|p| p.name == "forward").unwrap();
    let net = j
        .modules
        .iter()
        .find(|m| m.name.starts_with("Net_"))
        .unwrap();
    assert!((net.onednn_ms - forward.onednn_ms).abs() < 1e-6 * forward.onednn_ms);
    // Conv2d modules hold convolution primitives (and their reorders).
    let conv_dnn: f64 = j
        .modules
        .iter()
        .filter(|m| m.name.starts_with("Conv2d_"))
        .map(|m| m.onednn_ms)
        .sum();
    assert!(
        conv_dnn > 0.95 * forward.onednn_ms,
        "{conv_dnn} of {}",
        forward.onednn_ms
    );
}

/// RetinaNet (ResNeXt-50-FPN, 264 classes) recorded with `profilednn.profile`: the reference
/// run (torchvision's loss, torch.optim.SGD) and the fused one (ProfileDNN's loss and SGD, bf16
/// autocast, channels-last).
#[test]
fn retinanet_runs_join_with_known_structure() {
    for v in ["retinanet-reference", "retinanet-fused"] {
        let t = read_trace(&fixture(&format!("{v}.trace.json.gz"))).unwrap();
        let j = join(
            &t,
            LogInput::open(&fixture(&format!("{v}.log.gz"))).unwrap(),
        );
        assert_eq!(j.unattributed_calls, 0, "{v}");
        assert!(j.attributed_calls > 1500, "{v}: {}", j.attributed_calls);
        for (kind, op, n) in &j.issued {
            if kind == "convolution" {
                assert!(
                    op == "aten::mkldnn_convolution" || op == "aten::convolution_backward",
                    "{v}: {n} convolutions inside {op}"
                );
            }
        }
        assert_eq!(j.iterations, Some(3), "{v}");
        // Per-iteration rows: one per iteration, and together they hold every phase's time
        // (only the instant between the last step and the profiler's end is outside them).
        assert_eq!(
            j.per_iteration.iter().map(|r| r.index).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        for ph in &j.phases {
            let sum: f64 = j
                .per_iteration
                .iter()
                .flat_map(|r| &r.phases)
                .filter(|r| r.name == ph.name)
                .map(|r| r.time_ms)
                .sum();
            assert!(
                sum <= ph.time_ms * (1.0 + 1e-9) && sum >= 0.999 * ph.time_ms,
                "{v} {}: {sum} of {}",
                ph.name,
                ph.time_ms
            );
        }
        let dnn: f64 = j.per_iteration.iter().map(|r| r.onednn_ms).sum();
        assert!(
            (dnn - j.attributed_ms).abs() < 1e-6 * j.attributed_ms,
            "{v}"
        );
        // Each iteration's phases fit in its wall time.
        for r in &j.per_iteration {
            let inside: f64 = r.phases.iter().map(|p| p.time_ms).sum();
            assert!(
                inside <= r.time_ms * (1.0 + 1e-9),
                "{v} iteration {}",
                r.index
            );
        }
        // The model module holds every forward and every backward primitive: forward by the
        // Python stack, backward through the autograd nodes its ops created.
        let phase = |name: &str| j.phases.iter().find(|p| p.name == name).unwrap().clone();
        let (fwd, bwd) = (phase("forward"), phase("backward"));
        let net_f = j.modules.iter().find(|m| m.name == "RetinaNet_0").unwrap();
        let net_b = j
            .module_backward
            .iter()
            .find(|m| m.name == "RetinaNet_0")
            .unwrap();
        assert!(
            (net_f.onednn_ms - fwd.onednn_ms).abs() < 1e-6 * fwd.onednn_ms,
            "{v}"
        );
        assert!(
            (net_b.onednn_ms - bwd.onednn_ms).abs() < 1e-6 * bwd.onednn_ms,
            "{v}"
        );
        // The heads' backward holds their convolutions' backward: more than half of it.
        let head_b = j
            .module_backward
            .iter()
            .find(|m| m.name == "RetinaNetHead_0")
            .unwrap();
        assert!(head_b.onednn_ms > 0.5 * bwd.onednn_ms, "{v}");
        // Which loss ran.
        let loss_ops: Vec<&str> = j
            .ops
            .iter()
            .filter(|o| o.phase.map(|p| p.as_str()) == Some("loss"))
            .map(|o| o.name.as_str())
            .collect();
        let fused_loss = loss_ops.contains(&"_FocalLoss");
        let eager_loss = loss_ops.contains(&"aten::binary_cross_entropy_with_logits");
        assert_eq!(
            (fused_loss, eager_loss),
            (v == "retinanet-fused", v == "retinanet-reference"),
            "{v}: {loss_ops:?}"
        );
    }
}

#[test]
fn unreadable_traces_are_typed_errors_that_name_the_file() {
    use profilednn_torchtrace::TraceError;
    let missing = fixture("no-such-run.trace.json");
    match read_trace(&missing) {
        Err(e @ TraceError::Open { .. }) => {
            let text = e.to_string();
            assert!(text.contains("no-such-run.trace.json"), "{text}");
            assert!(text.contains("profilednn record --torch"), "{text}");
        }
        other => panic!("expected TraceError::Open, got {other:?}"),
    }
    // A gzip trace cut in the middle: read as far as it goes, as JSON cut short is (issue 51
    // item 19), with where reading stopped and why.
    let whole = std::fs::read(fixture("bn.trace.json.gz")).unwrap();
    let dir = std::env::temp_dir().join(format!("profilednn-trace-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.trace.json.gz");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    let t = read_trace(&cut).expect("a partial trace");
    let mut decompressed = Vec::new();
    let _ =
        flate2::read::MultiGzDecoder::new(&whole[..whole.len() / 2]).read_to_end(&mut decompressed);
    assert_eq!(t.truncated_at, Some(decompressed.len() as u64));
    assert!(t.stopped_by.is_some_and(|e| e.contains("deflate")));
    assert!(!t.ops.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Modules marked with their qualified names (`profilednn.profile(model=…)`'s
/// `profilednn.module: NAME` annotations) are shown by those names, and torch's own
/// `nn.Module: Conv2d_3` events are then left out (issue 41: rows read `Linear_8`). The marks
/// are made here from the fixture's own module events (same thread, start and duration, a
/// qualified name chosen by the test), so each renamed row must carry the figures the torch
/// event's row had.
#[test]
fn qualified_module_marks_name_the_modules() {
    let qualified = |torch_name: &str| match torch_name {
        "Net_0" => "Net".to_string(),
        other => format!("net.{}", other.to_lowercase()),
    };
    let mut raw = raw_trace("reference.trace.json.gz");
    let events = raw["traceEvents"].as_array_mut().unwrap();
    let marks: Vec<serde_json::Value> = events
        .iter()
        .filter_map(|e| {
            let name = e["name"].as_str()?.strip_prefix("nn.Module: ")?;
            let mut m = e.clone();
            m["cat"] = "user_annotation".into();
            m["name"] = format!("profilednn.module: {}", qualified(name)).into();
            m["args"] = serde_json::json!({});
            Some(m)
        })
        .collect();
    assert!(
        marks.len() > 10,
        "fixture changed: {} module events",
        marks.len()
    );
    events.extend(marks);
    let path = std::env::temp_dir().join(format!("qualified-{}.trace.json", std::process::id()));
    std::fs::write(&path, serde_json::to_string(&raw).unwrap()).unwrap();
    let log = || LogInput::open(&fixture("reference.log.gz")).unwrap();
    let marked = join(&read_trace(&path).unwrap(), log());
    std::fs::remove_file(&path).unwrap();
    let plain = join(
        &read_trace(&fixture("reference.trace.json.gz")).unwrap(),
        log(),
    );
    assert_eq!(marked.modules.len(), plain.modules.len());
    for p in &plain.modules {
        let q = qualified(&p.name);
        let m = marked
            .modules
            .iter()
            .find(|m| m.name == q)
            .unwrap_or_else(|| panic!("no module {q}"));
        assert_eq!(
            (m.calls, m.time_ms, m.onednn_ms),
            (p.calls, p.time_ms, p.onednn_ms),
            "{q}"
        );
    }
    for p in &plain.module_backward {
        let q = qualified(&p.name);
        assert!(
            marked
                .module_backward
                .iter()
                .any(|m| m.name == q && m.time_ms == p.time_ms),
            "{q}"
        );
    }
}

/// A `profilednn.profile` trace of `n` loop iterations of 1 ms each (plus the empty range the
/// profiler opens after the last step), whose iterations listed in `compile` hold a 500 ms
/// `dynamo` event; and its log of markers only.
fn compiled_run(n: usize, compile: &[usize]) -> (profilednn_torchtrace::TorchJoin, String) {
    let mut events = Vec::new();
    for i in 0..=n {
        let t0 = i as f64 * 10_000.0;
        let ev = |name: &str, cat: &str, ts: f64, dur: f64| {
            format!(r#"{{"ph":"X","cat":"{cat}","name":"{name}","ts":{ts},"dur":{dur},"tid":1}}"#)
        };
        events.push(ev(
            &format!("profilednn.iteration#{i}"),
            "user_annotation",
            t0,
            9_000.0,
        ));
        if i == n {
            continue; // the range after the last step holds nothing of the loop
        }
        if compile.contains(&i) {
            events.push(ev("dynamo", "cpu_op", t0 + 10.0, 500.0));
        }
        events.push(ev(
            "Torch-Compiled Region: 0/0",
            "cpu_op",
            t0 + 600.0,
            1000.0,
        ));
    }
    let trace = format!(
        r#"{{"baseTimeNanoseconds": 0, "traceEvents": [{}]}}"#,
        events.join(",")
    );
    let dir = std::env::temp_dir().join(format!(
        "pd-compiled-{}-{n}-{}",
        std::process::id(),
        compile.len()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (tp, lp) = (dir.join("t.json"), dir.join("l.log"));
    std::fs::write(&tp, trace).unwrap();
    let markers: String = (0..=n)
        .map(|i| format!("profilednn,iteration,{i}\n"))
        .collect();
    std::fs::write(&lp, markers).unwrap();
    let t = read_trace(&tp).unwrap();
    let j = join(&t, LogInput::open(&lp).unwrap());
    let w = j.warnings.join("\n");
    (j, w)
}

/// Only the compiling iteration is set apart; when every loop iteration compiles, none is (the
/// empty range after the last step is no iteration to keep), and the view says why.
#[test]
fn compiling_iterations_are_set_apart_unless_all_compile() {
    let (j, w) = compiled_run(3, &[0]);
    assert_eq!(j.compiling.iter().map(|c| c.index).collect::<Vec<_>>(), [0]);
    assert_eq!(j.iterations, Some(2));
    assert!(j.ops.iter().all(|o| o.name != "dynamo"), "{:?}", j.ops);
    // Two steady calls of the 1 ms region.
    let region = j
        .ops
        .iter()
        .find(|o| o.name.starts_with("Torch-Compiled"))
        .unwrap();
    assert_eq!(region.calls, 2);
    assert!(!w.contains("compiled"), "{w}");
    for (n, compile) in [(1, vec![0]), (2, vec![0, 1])] {
        let (j, w) = compiled_run(n, &compile);
        assert!(j.compiling.is_empty(), "{n}: {:?}", j.compiling);
        assert_eq!(j.iterations, Some(n as u64));
        assert!(j.ops.iter().any(|o| o.name == "dynamo"));
        assert!(
            w.contains("compiled") && w.contains("include the compilation"),
            "{w}"
        );
    }
}

/// A negative duration (found by fuzzing) is read as an instant: no op ends before it starts.
#[test]
fn a_negative_duration_is_an_instant() {
    let t = profilednn_torchtrace::read_trace_from(
        &br#"{"traceEvents": [{"ph":"X","cat":"cpu_op","name":"aten::add","ts":20,"dur":-100,"tid":1}]}"#[..],
        "t",
    )
    .unwrap();
    assert_eq!((t.ops[0].start, t.ops[0].end), (20.0, 20.0));
}

/// `join_steady` (what `project --to` moves) leaves the first iteration out of every
/// per-iteration figure, as a compiling one is: the EPYC Zen 4 f32 transformer's iterations
/// took 81.2, 28.0, 28.8 and 25.8 ms (the trace's `profilednn.iteration#N` ranges, read by
/// hand), so the steady step is the mean of the last three, and its framework ops shrink with it
/// (the first iteration's element-wise ops carried the run's one-time work).
#[test]
fn the_steady_join_leaves_the_warm_up_iteration_out() {
    let open = || {
        (
            read_trace(&fixture("gpt-f32.trace.json.gz")).unwrap(),
            LogInput::open(&fixture("gpt-f32.log.gz")).unwrap(),
        )
    };
    let (t, log) = open();
    let all = join(&t, log);
    let (t, log) = open();
    let steady = profilednn_analysis::torch_join::join_steady(&t, log);
    assert_eq!((all.iterations, steady.iterations), (Some(4), Some(3)));
    assert_eq!((all.warm_up, steady.warm_up), (None, Some(0)));
    assert_eq!(steady.per_iteration.len(), 4, "the rows stay");
    // Left out, but not compiled: no torch.compile warm-up on an eager run.
    assert!(profilednn_analysis::compile_cost::warm_up(&steady).is_none());
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let by_hand = mean(&[28.0, 28.8, 25.8]);
    let s = steady.steady_step_ms().unwrap();
    assert!((s - by_hand).abs() < 0.1, "{s} vs {by_hand}");
    let a = all.steady_step_ms().unwrap();
    assert!((a - mean(&[81.2, 28.0, 28.8, 25.8])).abs() < 0.1, "{a}");
    // Framework ops per iteration: the warm-up's share gone.
    let fw = |j: &profilednn_torchtrace::TorchJoin| {
        j.framework.top_level_ms / j.iterations.unwrap() as f64
    };
    assert!(
        fw(&steady) < 0.7 * fw(&all),
        "{} vs {}",
        fw(&steady),
        fw(&all)
    );
}
