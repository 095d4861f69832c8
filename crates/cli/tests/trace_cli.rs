//! End-to-end: `profilednn trace` produces a valid Chrome trace with every execution in it.

mod common;
use common::{bin, root, temp_dir};
use serde_json::Value;

fn trace(log: &str) -> Value {
    let out = temp_dir().join("t.json");
    bin()
        .args(["trace", log, "-o", out.to_str().unwrap()])
        .assert()
        .success();
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn exec_events(t: &Value) -> Vec<&Value> {
    t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == 1)
        .collect()
}

#[test]
fn timestamps_place_events_where_the_log_says() {
    let log =
        root().join("fixtures/corpus/onednn/v3_14_benchdnn_level2_timestamp/level2_timestamp.log");
    let t = trace(log.to_str().unwrap());
    assert_eq!(t["otherData"]["timeline"], "from the log's timestamps");
    let text = std::fs::read_to_string(&log).unwrap();
    // Naive reading: v1 timestamped lines are `onednn_verbose,v1,TS,primitive,OP,…,TIME`.
    let lines: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("onednn_verbose,v1,") && l.contains(",primitive,"))
        .map(|l| l.split(',').collect())
        .filter(|f: &Vec<&str>| f[4] == "exec" || f[4].starts_with("create"))
        .collect();
    let origin: f64 = lines[0][2].parse().unwrap();
    let execs: Vec<&Vec<&str>> = lines.iter().filter(|f| f[4] == "exec").collect();
    let events = exec_events(&t);
    assert_eq!(events.len(), execs.len());
    for (e, f) in events.iter().zip(&execs) {
        let ts = (f[2].parse::<f64>().unwrap() - origin) * 1e3;
        let dur = f.last().unwrap().parse::<f64>().unwrap() * 1e3;
        assert!((e["ts"].as_f64().unwrap() - ts).abs() < 1e-3, "{e}");
        assert!((e["dur"].as_f64().unwrap() - dur).abs() < 1e-6, "{e}");
        assert_eq!(e["name"], f[6]);
    }
    // Creations go to their own track.
    let creates = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == 2)
        .count();
    assert_eq!(creates, lines.len() - execs.len());
}

#[test]
fn without_timestamps_events_are_laid_end_to_end() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let t = trace(log.to_str().unwrap());
    assert!(t["otherData"]["timeline"]
        .as_str()
        .unwrap()
        .contains("end to end"));
    let events = exec_events(&t);
    assert_eq!(events.len(), 3879);
    let mut end = 0.0;
    for e in &events {
        let ts = e["ts"].as_f64().unwrap();
        assert!((ts - end).abs() < 1e-6, "no gaps, no overlaps");
        end = ts + e["dur"].as_f64().unwrap();
    }
    // 14989.4 ms of oneDNN time in the report.
    assert!((end / 1e3 - 14989.4).abs() < 0.1, "{end}");
    let markers = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "i")
        .count();
    assert_eq!(markers, 3, "iteration markers become instant events");
    assert!(events[0]["args"]["flops"].is_u64() || events[0]["args"].get("flops").is_none());
}

/// A level-2 log without timestamps (MKL-DNN 0.19): creations and executions laid end to end
/// in log order, each starting where the one before it ended (sums of the logged times).
#[test]
fn creations_without_timestamps_are_laid_end_to_end() {
    let log = root().join("fixtures/corpus/onednn/v0_19_mxnet/simple_training_net_c.level2.log");
    let t = trace(log.to_str().unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    // Naive reading: `mkldnn_verbose,OP,…,TIME`, OP `create` or `exec`.
    let lines: Vec<(bool, f64)> = text
        .lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[0] == "mkldnn_verbose" && (f[1] == "exec" || f[1] == "create"))
        .map(|f| {
            (
                f[1] == "create",
                f.last().unwrap().parse::<f64>().unwrap() * 1e3,
            )
        })
        .collect();
    let mut events: Vec<&Value> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    events.sort_by_key(|e| e["args"]["line"].as_u64().unwrap());
    assert_eq!(events.len(), lines.len());
    assert!(lines.iter().filter(|l| l.0).count() >= 10);
    let mut start = 0.0;
    for (e, (create, dur)) in events.iter().zip(&lines) {
        assert_eq!(e["tid"], if *create { 2 } else { 1 }, "{e}");
        assert!(
            (e["ts"].as_f64().unwrap() - start).abs() < 1e-6,
            "{e} should start at {start}"
        );
        assert!((e["dur"].as_f64().unwrap() - dur).abs() < 1e-6, "{e}");
        start += dur;
    }
}
