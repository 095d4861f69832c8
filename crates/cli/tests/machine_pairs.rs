//! `project --to` on the machine library (machines/): every pair of machines with recordings of
//! the same name projected A → B against B's real run, and the method's own checks (a machine
//! onto itself, a machine twice as fast, bad target profiles, emulation).

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn project(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_profilednn"))
        .current_dir(root())
        .arg("project")
        .args(args)
        .output()
        .unwrap()
}

/// `project LOG --torch-trace TRACE --from A --to B --format json`: the first target.
fn projected(log: &str, trace: Option<&str>, from: &str, to: &str) -> Value {
    let mut a = vec![log];
    if let Some(t) = trace {
        a.extend(["--torch-trace", t]);
    }
    a.extend(["--from", from, "--to", to, "--format", "json"]);
    let out = project(&a);
    assert!(
        out.status.success(),
        "project {a:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "profilednn.machine-projection.v1");
    v["targets"][0].clone()
}

fn onednn_ms(t: &Value, which: &str) -> f64 {
    t["parts"][0][which].as_f64().unwrap()
}

/// A machine's recordings by name: `recordings/NAME.log.gz` (+ `.trace.json.gz`) and those
/// `recordings.json` references.
fn recordings(slug: &str) -> BTreeMap<String, (String, Option<String>)> {
    let dir = root().join("machines").join(slug);
    let mut m = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir.join("recordings")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if let Some(stem) = name.strip_suffix(".log.gz") {
                let rel = format!("machines/{slug}/recordings/{stem}");
                let trace = format!("{rel}.trace.json.gz");
                let trace = root().join(&trace).exists().then_some(trace);
                m.insert(stem.to_string(), (format!("{rel}.log.gz"), trace));
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("recordings.json")) {
        let v: Value = serde_json::from_str(&text).unwrap();
        for (name, r) in v["recordings"].as_object().unwrap() {
            let log = r["log"].as_str().unwrap().to_string();
            assert!(root().join(&log).exists(), "{slug}: {log} is missing");
            m.insert(name.clone(), (log, r["trace"].as_str().map(String::from)));
        }
    }
    m
}

fn machines() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("machines"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("profile.json").exists())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn every_library_pair_projects_within_25_percent_where_it_is_a_target_pair() {
    let lib: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("machines/library.json")).unwrap(),
    )
    .unwrap();
    let targets: Vec<(String, String)> = lib["target_pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["from"].as_str().unwrap().into(),
                p["to"].as_str().unwrap().into(),
            )
        })
        .collect();
    let all = machines();
    for (from, to) in &targets {
        if !all.contains(from) || !all.contains(to) {
            println!(
                "SKIPPED: {from} → {to}: machines/{} has no profile yet",
                if all.contains(from) { to } else { from }
            );
        }
    }
    println!(
        "{:<18} {:<18} {:<24} {:>10} {:>10} {:>7} {:>10} {:>10}",
        "from", "to", "recording", "step proj", "step real", "err", "oneDNN pr", "oneDNN re"
    );
    let mut failures = Vec::new();
    for a in &all {
        for b in all.iter().filter(|b| *b != a) {
            let (ra, rb) = (recordings(a), recordings(b));
            let common: Vec<&String> = ra.keys().filter(|k| rb.contains_key(*k)).collect();
            if common.is_empty() {
                println!("SKIPPED: {a} → {b}: no recording of the same name on both machines");
                continue;
            }
            let (pa, pb) = (
                format!("machines/{a}/profile.json"),
                format!("machines/{b}/profile.json"),
            );
            for name in common {
                let (la, ta) = &ra[name];
                let (lb, tb) = &rb[name];
                let p = projected(la, ta.as_deref(), &pa, &pb);
                // B's real run, as read by the same reader the source side uses (B onto itself).
                let real = projected(lb, tb.as_deref(), &pb, &pb);
                let (ps, rs) = (
                    p["projected_step_ms"].as_f64().unwrap(),
                    real["logged_step_ms"].as_f64().unwrap(),
                );
                let err = ps / rs - 1.0;
                println!(
                    "{a:<18} {b:<18} {name:<24} {ps:>10.3} {rs:>10.3} {:>+6.1}% {:>10.3} {:>10.3}",
                    err * 100.0,
                    onednn_ms(&p, "projected_ms"),
                    onednn_ms(&real, "logged_ms")
                );
                if targets.contains(&(a.clone(), b.clone())) && err.abs() > 0.25 {
                    failures.push(format!("{a} → {b} {name}: {:+.1} %", err * 100.0));
                }
                // Every pair, target or open: the truth lies inside the band the projection
                // states.
                let band = &p["band"];
                let (lo, hi) = (
                    band["low_ms"].as_f64().unwrap(),
                    band["high_ms"].as_f64().unwrap(),
                );
                if !(lo..=hi).contains(&rs) {
                    failures.push(format!(
                        "{a} → {b} {name}: real {rs:.3} ms outside the stated band {lo:.3}–{hi:.3} ms"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "target pairs beyond 25 %, or a truth outside its band: {failures:?}"
    );
}

/// A spec sheet in the library (`machines/B/spec.json`: the socket's datasheet, no `peak`
/// run) as the target of every pair with recordings: the truth lies inside the wider band a
/// spec sheet is given (docs/machines.md, "Error band"). Prints the spec-sheet matrix.
#[test]
fn a_spec_sheet_projection_band_holds_the_truth_of_every_library_pair() {
    let all = machines();
    let mut failures = Vec::new();
    let mut pairs = 0;
    for b in &all {
        let spec = format!("machines/{b}/spec.json");
        if !root().join(&spec).exists() {
            println!("SKIPPED: {b}: no spec sheet in the library");
            continue;
        }
        let pb = format!("machines/{b}/profile.json");
        for a in all.iter().filter(|a| *a != b) {
            let (ra, rb) = (recordings(a), recordings(b));
            let pa = format!("machines/{a}/profile.json");
            for name in ra.keys().filter(|k| rb.contains_key(*k)) {
                let (la, ta) = &ra[name];
                let (lb, tb) = &rb[name];
                let p = projected(la, ta.as_deref(), &pa, &spec);
                assert_eq!(p["profile_kind"], "spec_sheet", "{spec}");
                let rs = projected(lb, tb.as_deref(), &pb, &pb)["logged_step_ms"]
                    .as_f64()
                    .unwrap();
                let ps = p["projected_step_ms"].as_f64().unwrap();
                let band = &p["band"];
                let (lo, hi) = (
                    band["low_ms"].as_f64().unwrap(),
                    band["high_ms"].as_f64().unwrap(),
                );
                println!(
                    "spec sheet: {a:<18} {b:<18} {name:<24} {ps:>9.3} {rs:>9.3} {:>+6.1}% band {lo:.1}–{hi:.1}",
                    (ps / rs - 1.0) * 100.0
                );
                pairs += 1;
                if !(lo..=hi).contains(&rs) {
                    failures.push(format!(
                        "{a} → {spec} {name}: real {rs:.3} outside {lo:.3}–{hi:.3}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:?}");
    if pairs == 0 {
        println!("SKIPPED: no spec sheet with recordings on both sides");
    }
}

const ZEN4: &str = "machines/epyc-zen4-25-17/profile.json";
const GPT_BF16: &str = "fixtures/torch/gpt-bf16.log.gz";
const GPT_BF16_TRACE: &str = "fixtures/torch/gpt-bf16.trace.json.gz";

#[test]
fn a_recording_projected_onto_its_own_machine_is_its_logged_step() {
    // Every ratio is 1 (same roofs, same units, same one-core peak): nothing moves.
    let t = projected(GPT_BF16, Some(GPT_BF16_TRACE), ZEN4, ZEN4);
    let (l, p) = (
        t["logged_step_ms"].as_f64().unwrap(),
        t["projected_step_ms"].as_f64().unwrap(),
    );
    assert!(l > 0.0 && (p - l).abs() < 1e-9 * l, "{l} {p}");
    assert!(t["emulated"].as_array().unwrap().is_empty());
    assert_eq!(t["profile_kind"], "measured");
}

/// A copy of the Zen 4 profile with every roof × `f` (peaks, unit peaks, per-core peaks,
/// memory), written to a temporary file.
fn zen4_times(f: f64, tag: &str, edit: impl Fn(&mut Value)) -> PathBuf {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(ZEN4)).unwrap()).unwrap();
    let scale = |x: &mut Value| *x = Value::from(x.as_f64().unwrap() * f);
    for p in ["f32", "bf16"] {
        scale(&mut v["peak_gflops"][p]);
    }
    scale(&mut v["unit_gflops"]["f32"]["avx512"]);
    scale(&mut v["unit_gflops"]["bf16"]["avx512_bf16"]);
    scale(&mut v["memory_gbps"]);
    for c in v["compute"].as_array_mut().unwrap() {
        scale(&mut c["per_core_gflops"]);
        scale(&mut c["all_core_gflops"]);
    }
    edit(&mut v);
    let p = std::env::temp_dir().join(format!("profilednn-{tag}-{}.json", std::process::id()));
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn a_target_twice_as_fast_everywhere_halves_every_part() {
    // Hand reference: every roof and the one-core peak doubled, so every ratio is 1/2.
    let fast = zen4_times(2.0, "fast", |_| {});
    let t = projected(GPT_BF16, Some(GPT_BF16_TRACE), ZEN4, fast.to_str().unwrap());
    let (l, p) = (
        t["logged_step_ms"].as_f64().unwrap(),
        t["projected_step_ms"].as_f64().unwrap(),
    );
    assert!((p - l / 2.0).abs() < 1e-9 * l, "{l} {p}");
    for part in t["parts"].as_array().unwrap() {
        let (pl, pp) = (
            part["logged_ms"].as_f64().unwrap(),
            part["projected_ms"].as_f64().unwrap(),
        );
        assert!((pp - pl / 2.0).abs() < 1e-9 * pl.max(1.0), "{part}");
    }
    let _ = std::fs::remove_file(fast);
}

#[test]
fn bf16_on_a_target_without_bf16_units_is_projected_emulated_and_said() {
    // The Zen 4 without its AVX512-BF16 unit: bf16 falls back to the f32 FMA roof (230 of 461
    // GFLOP/s), so the compute-bound bf16 matmuls get slower, and the output says "emulated".
    let no_bf16 = zen4_times(1.0, "nobf16", |v| {
        v["peak_gflops"].as_object_mut().unwrap().remove("bf16");
        v["unit_gflops"].as_object_mut().unwrap().remove("bf16");
        v["compute"]
            .as_array_mut()
            .unwrap()
            .retain(|c| c["precision"] == "f32");
        v["isa"] = serde_json::json!(["sse", "avx2", "avx512"]);
    });
    let t = projected(
        GPT_BF16,
        Some(GPT_BF16_TRACE),
        ZEN4,
        no_bf16.to_str().unwrap(),
    );
    let e = t["emulated"].as_array().unwrap();
    assert!(
        !e.is_empty() && e[0].as_str().unwrap().starts_with("bf16:"),
        "{e:?}"
    );
    assert!(e[0].as_str().unwrap().contains("emulated"), "{e:?}");
    assert!(onednn_ms(&t, "projected_ms") > onednn_ms(&t, "logged_ms"));
    // Emulation is a default standing in: the band is wider than the default ±35 %.
    assert!(t["band"]["relative"].as_f64().unwrap() > 0.35);
    let _ = std::fs::remove_file(no_bf16);
}

#[test]
fn a_target_of_another_schema_or_with_missing_fields_is_named() {
    let dir = std::env::temp_dir();
    let other = dir.join(format!("profilednn-v3-{}.json", std::process::id()));
    std::fs::write(
        &other,
        r#"{"schema":"profilednn.machine.v3","name":"x","peak_gflops":{"f32":1},"memory_gbps":1}"#,
    )
    .unwrap();
    let out = project(&[GPT_BF16, "--from", ZEN4, "--to", other.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(other.to_str().unwrap())
            && err.contains(
                "schema 'profilednn.machine.v3' is another version of the machine profile"
            ),
        "{err}"
    );
    std::fs::write(&other, r#"{"name":"x","peak_gflops":{"bf16":1}}"#).unwrap();
    let out = project(&[GPT_BF16, "--from", ZEN4, "--to", other.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing \"peak_gflops\".\"f32\" (GFLOP/s, all cores), \"memory_gbps\" (GB/s, all cores)"), "{err}");
    let _ = std::fs::remove_file(other);
}

#[test]
fn without_from_a_log_of_another_machine_asks_for_its_profile() {
    // The Zen 4's log has no AMX; on a machine with AMX its units are not this machine's.
    if !profilednn_machine::cpu::isas().contains(&"amx") {
        println!("SKIPPED: this CPU has no AMX, the Zen 4 log's units may be its own");
        return;
    }
    let out = project(&[GPT_BF16, "--to", ZEN4]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("pass --from SOURCE.json"), "{err}");
}
