//! End-to-end: cost model and roofline through the real binary (`report --machine`, `peak`).

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod common;
use common::{bin, json_of, root, temp_dir as tempfile_dir};

fn write_machine(dir: &Path, f32_gflops: f64, gbps: f64) -> PathBuf {
    let p = dir.join("m.json");
    std::fs::write(
        &p,
        format!(
            r#"{{"name":"test box","peak_gflops":{{"f32":{f32_gflops}}},"memory_gbps":{gbps}}}"#
        ),
    )
    .unwrap();
    p
}

/// benchdnn's counts, keyed by (prim_kind, prop_kind, shapes, mds).
fn benchdnn_ops() -> HashMap<(String, String, String, String), u64> {
    let text =
        std::fs::read_to_string(root().join("fixtures/corpus/onednn/flops_reference.tsv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                (f[0].into(), f[1].into(), f[2].into(), f[3].into()),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn report_rows_carry_benchdnn_flops_and_the_roofline_arithmetic_holds() {
    let dir = tempfile_dir();
    let machine = write_machine(&dir, 100.0, 10.0);
    let log =
        root().join("fixtures/corpus/onednn/v3_14_benchdnn_resnet50_f32/resnet50_f32_train.log");
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--top",
        "1000",
        "--machine",
        machine.to_str().unwrap(),
    ]);
    let reference = benchdnn_ops();
    let rows = j["breakdowns"]["top_primitives"]["rows"]
        .as_array()
        .unwrap();
    let mut matched = 0;
    for r in rows {
        assert!(r.get("flops_per_call").is_some() && r.get("bytes_per_call").is_some());
        let key = (
            r["prim_kind"].as_str().unwrap().to_string(),
            r["prop_kind"].as_str().unwrap().to_string(),
            r["shapes"].as_str().unwrap().to_string(),
            r["mds"].as_str().unwrap().to_string(),
        );
        if let Some(ops) = reference.get(&key) {
            assert_eq!(
                r["flops_per_call"].as_f64().unwrap(),
                *ops as f64,
                "{key:?}"
            );
            matched += 1;
        }
    }
    assert!(
        matched >= 20,
        "only {matched} rows found in the benchdnn reference"
    );

    // Roofline per row, recomputed from the row's own work figures: 100 GFLOP/s, 10 GB/s.
    let e = &j["efficiency"];
    let mut measured = 0.0;
    let mut roof = 0.0;
    let prims = e["primitives"].as_array().unwrap();
    assert_eq!(prims.len() as u64, e["total_primitives"].as_u64().unwrap());
    for p in prims {
        let calls = p["calls"].as_f64().unwrap();
        let flops =
            p["flops_per_call"].as_f64().unwrap() + p["extra_flops_per_call"].as_f64().unwrap();
        let bytes = p["bytes_per_call"].as_f64().unwrap();
        let t = calls * (flops / 100e9).max(bytes / 10e9) * 1e3;
        let got = p["roofline_ms"].as_f64().unwrap();
        assert!((got - t).abs() <= 1e-9 * t.max(1.0), "{got} vs {t}");
        let bound = if flops / 100e9 >= bytes / 10e9 {
            "compute"
        } else {
            "memory"
        };
        assert_eq!(p["bound"], bound);
        measured += p["time_ms"].as_f64().unwrap();
        roof += got;
    }
    let ratio = e["ratio"].as_f64().unwrap();
    assert!((ratio - roof / measured).abs() < 1e-9, "run-level ratio");
    assert!(
        e["coverage"].as_f64().unwrap() > 0.99,
        "every kind in this log has a cost"
    );
}

#[test]
fn terminal_report_shows_the_efficiency_section() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--machine",
            machine.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("Roofline efficiency on 2S Xeon Platinum 8480+"),
        "{text}"
    );
    assert!(text.contains("Where optimisation pays"));
    assert!(text.contains("GFLOP/s"));
}

#[test]
fn a_broken_machine_profile_is_a_clear_error() {
    let dir = tempfile_dir();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"name":"x","peak_gflops":{"bf16":10}}"#).unwrap();
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--machine",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json") && err.contains("memory_gbps"),
        "{err}"
    );
}

#[test]
fn peak_writes_a_profile_that_report_accepts() {
    let dir = tempfile_dir();
    let prof = dir.join("here.json");
    bin()
        .args(["peak", "--quick", "-o", prof.to_str().unwrap()])
        .assert()
        .success();
    let p: Value = serde_json::from_str(&std::fs::read_to_string(&prof).unwrap()).unwrap();
    assert_eq!(p["schema"], "profilednn.machine.v2");
    assert!(p["peak_gflops"]["f32"].as_f64().unwrap() > 0.0);
    assert!(p["memory_gbps"].as_f64().unwrap() > 0.0);
    for k in ["read", "copy", "triad", "update"] {
        assert!(p["bandwidth"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["kernel"] == k));
    }
    assert!(p["compute"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["method"].as_str().unwrap().contains("best of")));
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--machine",
        prof.to_str().unwrap(),
    ]);
    let e = &j["efficiency"];
    assert!(e["ratio"].as_f64().unwrap() > 0.0);
    assert!(e["coverage"].as_f64().unwrap() > 0.9, "{}", e["coverage"]);
    // What the machine has decides which peak bounds the log's bf16 primitives: the log ran
    // on AMX (`…_amx`), so only a profile with an AMX bf16 peak bounds them without a stand-in.
    let has_bf16_peak = p["peak_gflops"].get("bf16").is_some();
    let amx = p["unit_gflops"]["bf16"].get("amx").is_some();
    let cpu_amx = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.split_whitespace().any(|w| w == "amx_bf16"))
        .unwrap_or(false);
    if cpu_amx && !amx {
        // Reported but not measured: only a refused tile state may explain it, and it is said.
        let notes = p["notes"].to_string();
        assert!(
            notes.contains("AMX is reported by CPUID but not measured"),
            "{notes}"
        );
    }
    if !cpu_amx {
        assert!(
            !amx,
            "an AMX peak on a CPU without amx_bf16: {}",
            p["unit_gflops"]
        );
    }
    let subs = e["substitutions"].as_array().unwrap();
    assert_eq!(subs.is_empty(), amx, "{subs:?}");
    for row in e["primitives"].as_array().unwrap() {
        if row["impl"].as_str().unwrap().ends_with("_amx") && row["precision"] == "bf16" {
            assert_eq!(row["peak_unit"].as_str() == Some("amx"), amx, "{row}");
        }
    }
    if !has_bf16_peak {
        assert!(subs[0]
            .as_str()
            .unwrap()
            .contains("this CPU has no bf16 units"));
    }
}

/// Issue 12: a bf16 log against a machine profile with only an f32 peak (a CPU without bf16
/// units) used to print "-0.000 ms / -0.000 ms = 0%" and two empty tables.
#[test]
fn bf16_log_on_an_f32_only_machine_is_bounded_by_the_f32_peak() {
    let dir = tempfile_dir();
    let machine = write_machine(&dir, 100.0, 10.0);
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let args = [
        "report",
        log.to_str().unwrap(),
        "--machine",
        machine.to_str().unwrap(),
    ];
    let j = json_of(&[&args[..], &["--format", "json", "--top", "1000"]].concat());
    let e = &j["efficiency"];
    assert!(e["coverage"].as_f64().unwrap() > 0.9, "{}", e["coverage"]);
    let mut bf16_rows = 0;
    for p in e["primitives"].as_array().unwrap() {
        if p["precision"] == "bf16" {
            bf16_rows += 1;
            assert_eq!(p["peak_precision"], "f32");
            // Recomputed by hand at the f32 peak: 100 GFLOP/s, 10 GB/s.
            let flops =
                p["flops_per_call"].as_f64().unwrap() + p["extra_flops_per_call"].as_f64().unwrap();
            let bytes = p["bytes_per_call"].as_f64().unwrap();
            let t = p["calls"].as_f64().unwrap() * (flops / 100e9).max(bytes / 10e9) * 1e3;
            let got = p["roofline_ms"].as_f64().unwrap();
            assert!((got - t).abs() <= 1e-9 * t.max(1.0), "{got} vs {t}");
        }
    }
    assert!(bf16_rows > 10, "{bf16_rows} bf16 rows");
    let out = bin().args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("bf16 bounded by the f32 peak"), "{text}");
    assert!(!text.contains("-0.000"), "{text}");
}

/// A precision with no applicable peak at all (int8 here) is uncosted with that reason, and a
/// report where nothing has a roofline says so instead of printing empty tables.
#[test]
fn a_precision_without_any_peak_is_uncosted_with_the_reason() {
    let dir = tempfile_dir();
    let machine = write_machine(&dir, 100.0, 10.0);
    let log = dir.join("int8.log");
    std::fs::write(
        &log,
        "onednn_verbose,exec,cpu,convolution,brgconv:avx512_core_vnni,forward_inference,src_u8::blocked:acdb::f0 wei_s8::blocked:AcdB64a4b::f0 bia_f32::blocked:a::f0 dst_u8::blocked:acdb::f0,,alg:convolution_direct,mb1_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,0.5\n"
            .repeat(3),
    )
    .unwrap();
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--machine",
            machine.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("No executed primitive has a roofline"),
        "{text}"
    );
    assert!(text.contains("no int8 peak"), "{text}");
    assert!(!text.contains("Where optimisation pays"), "{text}");
    assert!(!text.contains("-0"), "{text}");
}
