//! The spread of identical calls in `report` and in `advise`'s `timings-polluted` (issue 41):
//! the median and 90th percentile of a primitive's calls, beside the mean that hides a busy
//! machine. A synthetic log of the
//! newcomer's polluted reorder: 60 calls at 0.005 ms and 108 at 7.48 ms, interleaved, plus a
//! quiet ReLU at 0.01, 0.02, …, 0.10 ms. The references are computed here by nearest rank over
//! the times the test wrote, independently of the code.

mod common;
use common::{bin, json_of, temp_dir};
use serde_json::Value;

const REORDER: &str = "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,\
    src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd16b::f0,attr-scratchpad:user,,2x256x8x8,";
const RELU: &str = "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx512_core,forward_training,\
    data:f32::blocked:abcd::f0 diff:undef::undef::f0,,alg:eltwise_relu alpha:0 beta:0,2x16x8x8,";

/// The nearest-rank quantile of `times`.
fn nearest_rank(times: &[f64], q: f64) -> f64 {
    let mut v = times.to_vec();
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64).ceil() as usize).max(1) - 1]
}

fn log() -> (std::path::PathBuf, Vec<f64>, Vec<f64>) {
    let (mut reorder, mut relu) = (vec![], vec![]);
    let mut text = String::new();
    for i in 0..168 {
        let t = if i % 14 < 5 { 0.005 } else { 7.48 };
        reorder.push(t);
        text += &format!("{REORDER}{t}\n");
    }
    for i in 1..=10 {
        let t = i as f64 / 100.0;
        relu.push(t);
        text += &format!("{RELU}{t}\n");
    }
    let p = temp_dir().join("polluted.log");
    std::fs::write(&p, text).unwrap();
    (p, reorder, relu)
}

fn row<'a>(j: &'a Value, kind: &str) -> &'a Value {
    common::row_where(
        &j["breakdowns"]["top_primitives"]["rows"],
        "prim_kind",
        kind,
    )
}

#[test]
fn median_and_p90_of_identical_calls_in_json_and_terminal() {
    let (p, reorder, relu) = log();
    assert_eq!(reorder.iter().filter(|t| **t == 0.005).count(), 60);
    let j = json_of(&["report", p.to_str().unwrap(), "--format", "json"]);
    let r = row(&j, "reorder");
    // Identical calls at each rank: exact.
    assert_eq!(r["median_ms"].as_f64(), Some(nearest_rank(&reorder, 0.5)));
    assert_eq!(r["median_ms"].as_f64(), Some(7.48));
    assert_eq!(r["p90_ms"].as_f64(), Some(nearest_rank(&reorder, 0.9)));
    // Ten different times: within 1/16 of the nearest-rank figures (0.05 and 0.09 ms).
    let e = row(&j, "eltwise");
    for (k, q) in [("median_ms", 0.5), ("p90_ms", 0.9)] {
        let want = nearest_rank(&relu, q);
        let got = e[k].as_f64().unwrap();
        assert!((got - want).abs() <= want / 16.0, "{k}: {got} vs {want}");
    }
    let out = bin()
        .args(["report", p.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let head = text
        .lines()
        .skip_while(|l| !l.starts_with("Top unique primitives"))
        .nth(2)
        .unwrap();
    assert!(head.contains("mean ms   median ms   p90 ms"), "{text}");
    // The reorder's row: 168 calls, mean 4.81 ms, median and p90 7.480.
    let mean = reorder.iter().sum::<f64>() / 168.0;
    let line = text
        .lines()
        .find(|l| l.contains("reorder undef jit:blk"))
        .unwrap();
    let want = format!("{mean:.3}       7.480    7.480");
    assert!(line.contains(&want), "«{want}» not in «{line}»");
}

/// `timings-polluted` shows each polluted primitive's fastest call, median and p90, so the claim
/// can be checked: here the reorder, 0.005 ms fastest, 7.48 ms median and p90.
#[test]
fn advise_shows_the_spread_of_the_polluted_primitives() {
    let (p, reorder, _) = log();
    let out = bin()
        .args(["advise", p.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let fastest = reorder.iter().copied().fold(f64::MAX, f64::min);
    let want = format!(
        "reorder undef jit:blk 2x256x8x8 ({:.1} ms; per call: fastest {fastest:.3}, median {:.3}, p90 {:.3} ms)",
        reorder.iter().sum::<f64>(),
        nearest_rank(&reorder, 0.5),
        nearest_rank(&reorder, 0.9)
    );
    assert!(text.contains(&want), "«{want}» not in\n{text}");
    assert!(text.contains("1. [timings-polluted]"), "{text}");
}
