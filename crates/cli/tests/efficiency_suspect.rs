//! Impossible efficiencies are flagged, and a whole-machine roof is fitted to the threads the log
//! ran with. One hand-made convolution, 1 µs per call:
//!   flops = 2 · mb1 · oc16 · ic16 · kh3 · kw3 · oh6 · ow6 = 165 888 per call (no padding, so
//!   every tap counts) → 165.9 GFLOP/s;
//!   bytes = (src 16·8·8 + wei 16·16·3·3 + dst 16·6·6) · 4 = 15 616 (no bias): intensity 10.6,
//!   compute-bound on both machines below.

use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::{bin, root, temp_dir};

const FLOPS: f64 = 165_888.0;

fn log(dir: &Path, nthr: Option<u32>) -> PathBuf {
    let mut s = String::from("onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e)\n");
    if let Some(n) = nthr {
        s += &format!("onednn_verbose,info,cpu,runtime:OpenMP,nthr:{n}\n");
    }
    for _ in 0..4 {
        s += "onednn_verbose,exec,cpu,convolution,jit:avx512_core,forward_training,\
              src_f32::blocked:abcd::f0 wei_f32::blocked:abcd::f0 bia_undef::undef::: \
              dst_f32::blocked:abcd::f0,,alg:convolution_direct,\
              mb1_ic16oc16_ih8oh6kh3sh1dh0ph0_iw8ow6kw3sw1dw0pw0,0.001\n";
    }
    let p = dir.join(format!("conv{}.log", nthr.unwrap_or(0)));
    std::fs::write(&p, s).unwrap();
    p
}

fn report(log: &Path, machine: &Path, json: bool) -> String {
    let mut args = vec![
        "report",
        log.to_str().unwrap(),
        "--machine",
        machine.to_str().unwrap(),
    ];
    if json {
        args.extend(["--format", "json"]);
    }
    let out = bin().args(&args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A measured profile whose all-core f32 peak (100) equals its one-core peak (100) on 2 threads:
/// the convolution reaches 165.9 / 100 = 165.9 % of it.
#[test]
fn efficiency_above_100_percent_marks_the_profile_suspect() {
    let dir = temp_dir();
    let m = dir.join("busy.json");
    std::fs::write(
        &m,
        r#"{"schema":"profilednn.machine.v1","name":"busy box","threads":2,
            "peak_gflops":{"f32":100},"memory_gbps":1000,
            "compute":[{"precision":"f32","isa":"avx512","per_core_gflops":100,
                        "all_core_gflops":100,"method":"fma chains","runs":3}]}"#,
    )
    .unwrap();
    let l = log(&dir, Some(2));
    let text = report(&l, &m, false);
    let eff = FLOPS / 100e9 / 1e-6 * 100.0;
    assert_eq!(format!("{eff:.1}"), "165.9");
    for want in [
        format!("1 compute-bound primitive(s) above 100% of the roofline (up to {eff:.1}%"),
        format!("{:.1} GFLOP/s against a f32 roof of 100.0 GFLOP/s", FLOPS / 1e-6 / 1e9),
        "the all-core peak 100.0 GFLOP/s is not above the one-core peak 100.0 GFLOP/s with 2 threads"
            .to_string(),
    ] {
        assert!(text.contains(&want), "missing «{want}» in\n{text}");
    }
    let j: Value = serde_json::from_str(&report(&l, &m, true)).unwrap();
    assert_eq!(j["efficiency"]["suspect"].as_array().unwrap().len(), 3);
}

/// The spec sheet of a 2-socket, 112-thread Xeon 8480+ (f32 7168 GFLOP/s) against a log that
/// ran 2 threads: the f32 roof is 7168 · 2/112 = 128 GFLOP/s, so the convolution reaches
/// 165.9 / 128 = 129.6 % — flagged too. Without the log's thread count it says it did not scale.
#[test]
fn whole_machine_roof_is_scaled_to_the_log_threads() {
    let dir = temp_dir();
    let spec = root().join("fixtures/machine/xeon-8480-spec.json");
    let j: Value = serde_json::from_str(&report(&log(&dir, Some(2)), &spec, true)).unwrap();
    let e = &j["efficiency"];
    let roof = 7168.0 * 2.0 / 112.0;
    assert_eq!(roof, 128.0);
    assert!(
        (e["peak_gflops"]["f32"].as_f64().unwrap() - roof).abs() < 1e-9,
        "{e}"
    );
    let row = &e["primitives"][0];
    let eff = FLOPS / (roof * 1e9) / 1e-6;
    assert!(
        (row["efficiency"].as_f64().unwrap() - eff).abs() < 1e-6,
        "{row}"
    );
    assert!(
        e["scaling"]
            .as_str()
            .unwrap()
            .contains("scaled to the log's 2 threads"),
        "{e}"
    );
    let text = report(&log(&dir, Some(2)), &spec, false);
    assert!(
        text.contains(&format!("up to {:.1}%", eff * 100.0)),
        "{text}"
    );

    let text = report(&log(&dir, None), &spec, false);
    assert!(
        text.contains(
            "not scaled: the log has no thread count (nthr); the roofs are for all 112 threads"
        ),
        "{text}"
    );
}
