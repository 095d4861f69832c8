//! The PyTorch join on real runs (fixtures/torch: torch.profiler traces and oneDNN logs
//! recorded together), checked against structure known independently of the join.

use profilednn_analysis::torch_trace::{join, read_trace};
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
    let t = read_trace(&fixture("reference.trace.json.gz")).unwrap();
    let j = join(&t, LogInput::open(&fixture("reference.log.gz")).unwrap());
    // The "loss" annotation's own duration, summed from the raw JSON.
    let raw = raw_trace("reference.trace.json.gz");
    let ann: f64 = raw["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "user_annotation" && e["name"] == "loss")
        .map(|e| e["dur"].as_f64().unwrap() / 1e3)
        .sum();
    let loss = j.phases.iter().find(|p| p.name == "loss").unwrap().time_ms;
    assert!(
        loss <= ann * 1.0001 && loss >= 0.8 * ann,
        "loss ops {loss} ms vs annotation {ann} ms"
    );
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
    assert_eq!((a.start, a.end), (1e9 + 10.0, 1e9 + 15.0));
}
