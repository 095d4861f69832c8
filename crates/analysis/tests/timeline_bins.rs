//! The timeline's busy time per bin: each execution split across the bins it spans.

use profilednn_analysis::timeline::time_bins;
use profilednn_verbose::LogInput;
use std::io::Read;
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
}

/// (start epoch ms, duration ms) of every execution, read with plain string splitting.
fn executions(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter(|l| l.starts_with("onednn_verbose,v1,") && l.contains(",primitive,exec,"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].parse().unwrap(), f[f.len() - 1].parse().unwrap())
        })
        .collect()
}

#[test]
fn timeline_bins_never_exceed_100_percent_busy() {
    let path = fixture("torch/retinanet-reference.log.gz");
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let ex = executions(&text);
    assert!(ex.len() > 1000);
    let first = ex.iter().map(|e| e.0).fold(f64::INFINITY, f64::min);
    let last = ex.iter().map(|e| e.0).fold(f64::NEG_INFINITY, f64::max);
    let busy: f64 = ex.iter().map(|e| e.1).sum();
    let t = time_bins(LogInput::open(&path).unwrap(), first, last, 300);
    let totals: Vec<f64> = t.bins.iter().map(|b| b.iter().sum()).collect();
    assert!(totals.len() >= 300);
    for (i, v) in totals.iter().enumerate() {
        assert!(
            *v <= t.bin_ms * 1.01 + 1e-6,
            "bin {i}: {v} ms busy in a {} ms bin",
            t.bin_ms
        );
    }
    let binned: f64 = totals.iter().sum();
    assert!(
        (binned - busy).abs() < 1e-6 * busy,
        "{binned} ms binned, {busy} ms executed"
    );
}

#[test]
fn timeline_bins_split_an_execution_across_the_bins_it_spans() {
    // Starts at 1000, 1007.5 and 1010 ms; two bins of 5 ms over [1000, 1010], and a third
    // for the last execution, which ends at 1012.
    let dir = std::env::temp_dir().join(format!("profilednn-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("three.log");
    let line = |ts: &str, ms: &str| {
        format!("onednn_verbose,v1,{ts},primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:a::f0 dst:f32::blocked:a::f0,,,128,{ms}\n")
    };
    std::fs::write(
        &log,
        line("1000.0", "7.5") + &line("1007.5", "1") + &line("1010.0", "2"),
    )
    .unwrap();
    let t = time_bins(LogInput::open(&log).unwrap(), 1000.0, 1010.0, 2);
    assert_eq!(t.kinds, ["reorder"]);
    assert_eq!(t.bin_ms, 5.0);
    let got: Vec<f64> = t.bins.iter().map(|b| b[0]).collect();
    // [1000, 1007.5]: 5 + 2.5; [1007.5, 1008.5]: 1 in the second; [1010, 1012]: 2 in the third.
    assert_eq!(got, [5.0, 3.5, 2.0]);
}
