//! A PyTorch trace that does not belong to the log: another run, a log without timestamps, a
//! trace of part of the iterations. References come from the files themselves (the trace's
//! JSON, the log's text).

use std::io::Read;
use std::path::{Path, PathBuf};

mod common;
use common::{bin, gunzip, root, temp_dir};

fn run(log: &Path, trace: &Path) -> (String, String) {
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--torch-trace",
            trace.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn torch(name: &str) -> PathBuf {
    root().join("fixtures/torch").join(name)
}

/// Runs the binary with `args`; its exit status, stdout and stderr.
fn outcome(args: &[&str]) -> (bool, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A trace of another run is refused by every command that takes `--torch-trace` (before, the
/// report went on with the other run's step split and advice, under a warning).
#[test]
fn torch_trace_of_another_run_is_refused() {
    // The `bn` run's log with the `fused` run's trace (recorded one after the other).
    let log = torch("bn.log.gz");
    let trace = torch("fused.trace.json.gz");
    // By hand: the log's first timestamp (v1 lines: field 2, epoch ms) and the trace's last
    // event end (baseTimeNanoseconds + ts + dur µs).
    let first_log_ms = gunzip(&log)
        .lines()
        .filter(|l| l.contains(",primitive,exec,"))
        .map(|l| l.split(',').nth(2).unwrap().parse::<f64>().unwrap())
        .fold(f64::INFINITY, f64::min);
    let t: serde_json::Value = serde_json::from_str(&gunzip(&trace)).unwrap();
    let base_ms = t["baseTimeNanoseconds"].as_f64().unwrap() / 1e6;
    let trace_end_ms = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && ["cpu_op", "user_annotation", "python_function"]
                    .contains(&e["cat"].as_str().unwrap_or(""))
        })
        .map(|e| base_ms + (e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()) / 1e3)
        .fold(f64::NEG_INFINITY, f64::max);
    assert!(trace_end_ms < first_log_ms);
    let gap = format!("{:.1} s", (first_log_ms - trace_end_ms) / 1e3);
    let (l, tr) = (log.to_str().unwrap(), trace.to_str().unwrap());
    let same = torch("fused.log.gz");
    let dir = temp_dir();
    let out = dir.join("r.json");
    let commands: Vec<Vec<&str>> = vec![
        vec!["report", l, "--torch-trace", tr],
        vec!["advise", l, "--torch-trace", tr],
        vec![
            "replay",
            l,
            "--torch-trace",
            tr,
            "-o",
            out.to_str().unwrap(),
        ],
        vec!["plan", l, "--cores", "2", "--torch-trace", tr],
    ];
    let diff = vec!["diff", same.to_str().unwrap(), l, "--torch-trace", tr, tr];
    for args in commands.iter().chain([&diff]) {
        let (ok, stdout, err) = outcome(args);
        assert!(!ok, "{args:?} accepted the other run's trace: {stdout}");
        let w = format!(
            "{tr}: not the trace of {l}: the trace and the log do not overlap in time (the \
             trace ends before the log by {gap})"
        );
        assert!(err.contains(&w), "{args:?}: missing «{w}» in {err}");
        assert!(!stdout.contains("PyTorch view"), "{args:?}: {stdout}");
    }
    assert!(!out.exists());
}

#[test]
fn torch_trace_with_a_log_without_timestamps_is_warned() {
    // oneDNN 3.2 level-1 log: no timestamps, no iteration markers (this once panicked).
    let log = root().join("fixtures/corpus/onednn/v3_2_pypi/train_f32.level1.log");
    assert!(!std::fs::read_to_string(&log)
        .unwrap()
        .contains("profilednn,iteration"));
    let (_, err) = run(&log, &torch("fused.trace.json.gz"));
    assert!(err.contains("the log has no timestamps"), "{err}");
}

/// The `fused` trace cut to its iteration ranges #1 and #2 (as a profiler schedule that records
/// 2 of the 4 iterations would): per-iteration figures divide by 2, not by the log's 4.
#[test]
fn torch_trace_of_part_of_the_iterations_divides_by_the_iterations_it_covers() {
    let trace = torch("fused.trace.json.gz");
    let mut t: serde_json::Value = serde_json::from_str(&gunzip(&trace)).unwrap();
    let events = t["traceEvents"].as_array().unwrap().clone();
    let range = |n: u32| {
        let e = events
            .iter()
            .find(|e| e["name"] == format!("profilednn.iteration#{n}").as_str())
            .unwrap();
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap())
    };
    let (from, to) = (range(1).0, range(2).1);
    let kept: Vec<serde_json::Value> = events
        .into_iter()
        .filter(|e| match e["ts"].as_f64() {
            Some(ts) => ts >= from && ts + e["dur"].as_f64().unwrap_or(0.0) <= to,
            None => true,
        })
        .collect();
    // By hand: Net_0's forward time per iteration in the cut trace.
    let net_ms: f64 = kept
        .iter()
        .filter(|e| e["name"] == "nn.Module: Net_0")
        .map(|e| e["dur"].as_f64().unwrap() / 1e3)
        .sum::<f64>()
        / 2.0;
    t["traceEvents"] = serde_json::Value::Array(kept);
    let dir = temp_dir();
    let cut = dir.join("cut.trace.json");
    std::fs::write(&cut, serde_json::to_string(&t).unwrap()).unwrap();
    let (out, err) = run(&torch("fused.log.gz"), &cut);
    assert!(
        err.contains("the trace covers 2 of the log's 4 iterations"),
        "{err}"
    );
    let row = out
        .lines()
        .skip_while(|l| !l.starts_with("Modules (forward"))
        .find(|l| l.trim_start().starts_with("Net_0 "))
        .unwrap_or_else(|| panic!("{out}"));
    let f: Vec<&str> = row.split_whitespace().collect();
    // name, phase, calls, time ms, …
    assert_eq!(f[2], "1", "{row}");
    let got: f64 = f[3].parse().unwrap();
    assert!(
        (got - net_ms).abs() < 0.0015,
        "Net_0 {got} ms vs {net_ms:.3} by hand: {row}"
    );
}

/// A `.gz` trace cut short is read as far as it goes, as JSON cut short is: the log's report is
/// whole and a warning says where reading stopped (before, exit 1 and no report).
#[test]
fn truncated_gzip_trace_is_reported_as_far_as_it_goes() {
    let whole = std::fs::read(torch("fused.trace.json.gz")).unwrap();
    let dir = temp_dir();
    let cut = dir.join("cut.trace.json.gz");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    // By hand: the bytes of JSON the cut file still decompresses to.
    let mut got = Vec::new();
    let mut d = flate2::read::MultiGzDecoder::new(&whole[..whole.len() / 2]);
    let mut buf = [0u8; 1 << 16];
    loop {
        match d.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let (out, err) = run(&torch("fused.log.gz"), &cut);
    assert!(
        out.contains("Total oneDNN time: 212.1 ms in 628 calls"),
        "{out}"
    );
    assert!(out.contains("PyTorch view"), "{out}");
    let w = format!(
        "reading the trace stopped after {} bytes of its JSON",
        got.len()
    );
    assert!(err.contains(&w), "missing «{w}» in {err}");
    assert!(err.contains("incomplete deflate stream"), "{err}");
}

/// An empty file, or the log itself, given as the trace is refused, naming what was expected
/// (before, it joined to empty tables).
#[test]
fn not_a_trace_is_refused() {
    let dir = temp_dir();
    let empty = dir.join("empty.trace.json");
    std::fs::write(&empty, "").unwrap();
    let no_events = dir.join("other.json");
    std::fs::write(&no_events, "{\"displayTimeUnit\": \"ms\"}").unwrap();
    let log = torch("fused.log.gz");
    for (trace, what) in [
        (empty.clone(), "this is an empty file"),
        (log.clone(), "this is a oneDNN verbose log"),
        (no_events, "holds no `traceEvents` array"),
    ] {
        let (ok, out, err) = outcome(&[
            "report",
            log.to_str().unwrap(),
            "--torch-trace",
            trace.to_str().unwrap(),
        ]);
        assert!(!ok, "{}: accepted as a trace: {out}", trace.display());
        assert!(err.contains(&format!("{}: ", trace.display())), "{err}");
        assert!(err.contains(what), "missing «{what}» in {err}");
        assert!(err.contains("expected a PyTorch profiler trace"), "{err}");
    }
}

/// A PyTorch trace given as the log is named for what it is from its first bytes (before: "no
/// oneDNN verbose line found" after reading all of it).
#[test]
fn trace_given_as_the_log_is_named() {
    let trace = torch("fused.trace.json.gz");
    let (t, log) = (trace.to_str().unwrap(), torch("fused.log.gz"));
    let commands = [
        vec!["report", t],
        vec!["advise", t],
        vec!["diff", log.to_str().unwrap(), t],
    ];
    for cmd in &commands {
        let (ok, _, err) = outcome(cmd);
        assert!(!ok, "{cmd:?}");
        assert!(
            err.contains("this is a PyTorch profiler trace: expected a oneDNN verbose log")
                && err.contains("pass it with --torch-trace"),
            "{cmd:?}: {err}"
        );
    }
}
