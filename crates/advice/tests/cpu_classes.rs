//! The bf16 rules on every CPU class: one f32 and one bf16 training log, each given the ISA
//! header line that class's oneDNN prints (recorded lines: the fixtures', PyTorch's AMX tutorial,
//! oneDNN's `get_isa_info`), with which rules fire and what they recommend asserted by hand from
//! the class's specification (AVX512-BF16: Cooper Lake, Zen 4; AVX10.1: Sapphire/Emerald/Granite
//! Rapids; AMX on Sapphire Rapids and later; none on Ice Lake and Zen 3).

#[allow(dead_code)]
mod common;
use common::text;
use profilednn_advice::{advise, Advice, Evidence, Thresholds};
use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, summarize, Profile, ScanOptions, SummaryOptions};
use profilednn_machine::MachineProfile;
use profilednn_verbose::LogInput;

/// ResNet-50 f32 training, PyTorch 2.15 (oneDNN 3.13.3), on the AMX Xeon.
const F32_LOG: &str = "corpus/pytorch/resnet50_fp32.log.gz";
/// bf16 training through f32 (`jit_bf16:avx512_core`), oneDNN 3.2 capped at AVX512_CORE_VNNI.
const BF16_LOG: &str = "advice/bf16_without_bf16_units.log";

const SPR_OLD: &str = "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 and 8-bit integer support";
const SPR: &str = "Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support";
const XEON_NO_AMX: &str = "Intel AVX10.1";
const ICE_LAKE: &str = "Intel AVX-512 with Intel DL Boost";
const ZEN3: &str = "Intel AVX2";
const ZEN4: &str = "Intel AVX-512 with Intel DL Boost and bfloat16 support";
const AVX10_2: &str =
    "Intel AVX10.2 and Intel AMX with 8-bit integer, bfloat16, float16, float8 support";
const UNKNOWN: &str = "Intel AVX10.9 with hyperfloat support";

/// The log with its `isa:` header line's text replaced by `isa`.
fn with_isa(rel: &str, isa: &str) -> Profile {
    let text: String = text(rel)
        .lines()
        .map(|l| match l.find(",isa:") {
            Some(i) if l.contains(",info,") => format!("{},isa:{isa}\n", &l[..i]),
            _ => format!("{l}\n"),
        })
        .collect();
    assert!(
        text.contains(&format!("isa:{isa}")),
        "{rel} has an ISA line"
    );
    let dir = std::env::temp_dir().join(format!("profilednn-cpu-classes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let name: String = format!("{rel}-{isa}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // One file per call: tests run side by side, and rewriting a file another test has mapped
    // is a SIGBUS (it happened once).
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("{name}-{n}.log"));
    std::fs::write(&path, text).unwrap();
    let out = scan(LogInput::open(&path).unwrap(), &ScanOptions::default());
    let p = Profile::from_scan(rel, out, &ProfileOptions::default());
    let _ = std::fs::remove_file(&path);
    p
}

fn run(p: &Profile, machine: Option<MachineProfile>) -> Advice {
    let summary = summarize(
        std::slice::from_ref(p),
        &SummaryOptions {
            machine,
            ..Default::default()
        },
    );
    advise(
        &Evidence::from_profiles(std::slice::from_ref(p), p, &summary, None, None),
        &Thresholds::default(),
    )
}

fn fired(a: &Advice, id: &str) -> bool {
    a.rules.iter().find(|r| r.id == id).unwrap().fired
}

fn reason<'a>(a: &'a Advice, id: &str) -> &'a str {
    a.rules
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| r.why_not.as_deref())
        .unwrap_or("")
}

/// A machine profile with measured all-core rates (GFLOP/s), as `profilednn peak` writes.
fn machine(f32: f64, bf16: f64) -> MachineProfile {
    serde_json::from_value(serde_json::json!({
        "name": "measured", "peak_gflops": {"f32": f32, "bf16": bf16}, "memory_gbps": 20.0
    }))
    .unwrap()
}

#[test]
fn f32_log_on_every_cpu_class() {
    const R: &str = "f32-on-bf16-hardware";
    // AMX: bf16 recommended with the rule of thumb's gain, in either generation's words.
    for isa in [SPR, SPR_OLD, AVX10_2] {
        let a = run(&with_isa(F32_LOG, isa), None);
        let f = a
            .finding(R)
            .unwrap_or_else(|| panic!("{isa}: {}", reason(&a, R)));
        assert!(f.gain_ms.unwrap() > 0.0, "{isa}");
        assert!(f.title.contains("with bf16 units and AMX"), "{}", f.title);
        assert!(f.action.contains("torch.autocast"), "{}", f.action);
    }
    // bf16 dot products without AMX, no measured rate: the finding says the gain is not
    // estimable and how to measure it, instead of "half the compute time".
    for isa in [XEON_NO_AMX, ZEN4] {
        let a = run(&with_isa(F32_LOG, isa), None);
        let f = a
            .finding(R)
            .unwrap_or_else(|| panic!("{isa}: {}", reason(&a, R)));
        assert_eq!(f.gain_ms, None, "{isa}");
        assert!(f.title.contains("no AMX"), "{}", f.title);
        assert!(f.gain_basis.contains("profilednn peak"), "{}", f.gain_basis);
    }
    // ...with measured rates: bf16 at 0.53x f32 (83 vs 158 GFLOP/s a core on the Xeon family 6
    // model 207) is not recommended, and the text states the measured truth.
    let a = run(&with_isa(F32_LOG, XEON_NO_AMX), Some(machine(316.0, 166.0)));
    assert!(a.finding(R).is_none());
    let nr = a
        .not_recommended
        .iter()
        .find(|n| n.id == R)
        .expect("listed as not recommended");
    assert!(nr.why.contains("runs natively here"), "{}", nr.why);
    assert!(
        nr.why.contains("0.53x the f32 rate without AMX"),
        "{}",
        nr.why
    );
    // A measured rate that pays: the gain follows it (1 - 158/316 of the f32 compute time).
    let a = run(&with_isa(F32_LOG, ZEN4), Some(machine(158.0, 316.0)));
    let f = a.finding(R).unwrap();
    let time = f.evidence["time_ms"].as_f64().unwrap();
    assert!((f.gain_ms.unwrap() - 0.5 * time).abs() < 1e-6 * time);
    // No bf16 units, and an unknown ISA: quiet, the unknown one saying how to measure it.
    for isa in [ICE_LAKE, ZEN3] {
        let a = run(&with_isa(F32_LOG, isa), None);
        assert!(!fired(&a, R), "{isa}");
        assert!(reason(&a, R).contains("no bf16 units"), "{}", reason(&a, R));
    }
    let a = run(&with_isa(F32_LOG, UNKNOWN), None);
    assert!(!fired(&a, R));
    assert!(reason(&a, R).contains("unknown"), "{}", reason(&a, R));
    assert!(
        reason(&a, R).contains("profilednn peak"),
        "{}",
        reason(&a, R)
    );
}

/// A profile as `peak` writes it: every unit measured (`compute`), `peak_gflops` the best.
fn measured_units(units: &[(&str, &str, f64)]) -> MachineProfile {
    let compute: Vec<serde_json::Value> = units
        .iter()
        .map(|(p, isa, g)| {
            serde_json::json!({"precision": p, "isa": isa, "per_core_gflops": g / 2.0,
                               "all_core_gflops": g, "method": "test", "runs": 1})
        })
        .collect();
    let mut peak = serde_json::Map::new();
    for (p, _, g) in units {
        let best = peak.get(*p).and_then(|v| v.as_f64()).unwrap_or(0.0).max(*g);
        peak.insert(p.to_string(), best.into());
    }
    serde_json::from_value(serde_json::json!({
        "name": "measured", "peak_gflops": peak, "memory_gbps": 53.0, "compute": compute
    }))
    .unwrap()
}

#[test]
fn bf16_on_an_amx_xeon_follows_the_amx_rate() {
    const R: &str = "f32-on-bf16-hardware";
    // Issue 52: on the AMX Xeon, a profile whose bf16 figure was the dot product's (228
    // against 468 GFLOP/s f32) called bf16 "not recommended ... 0.49x", where a real bf16 run
    // of the same ResNet-50 was 1.71x faster. The AMX rate decides now.
    let with_amx = measured_units(&[
        ("f32", "avx512", 468.0),
        ("bf16", "avx512_bf16", 228.0),
        ("bf16", "amx", 2000.0),
    ]);
    let a = run(&with_isa(F32_LOG, SPR), Some(with_amx));
    let f = a.finding(R).unwrap_or_else(|| panic!("{}", reason(&a, R)));
    assert!(
        f.gain_basis.contains("2000 against 468"),
        "{}",
        f.gain_basis
    );
    let time = f.evidence["time_ms"].as_f64().unwrap();
    assert!((f.gain_ms.unwrap() - time * (1.0 - 468.0 / 2000.0)).abs() < 1e-6 * time);
    // A profile without AMX (schema v1, or tiles not granted) gives no bf16 rate for an AMX
    // CPU: the rule of thumb, never "not recommended" from the dot product.
    let no_amx = measured_units(&[("f32", "avx512", 468.0), ("bf16", "avx512_bf16", 228.0)]);
    let a = run(&with_isa(F32_LOG, SPR), Some(no_amx.clone()));
    assert!(a.not_recommended.iter().all(|n| n.id != R));
    let f = a.finding(R).unwrap_or_else(|| panic!("{}", reason(&a, R)));
    assert!(
        f.gain_basis.contains("AMX's bf16 tiles"),
        "{}",
        f.gain_basis
    );
    // The same profile on a Xeon without AMX: the dot product is the rate, and it does not pay.
    let a = run(&with_isa(F32_LOG, XEON_NO_AMX), Some(no_amx));
    assert!(a.not_recommended.iter().any(|n| n.id == R));
}

#[test]
fn bf16_log_on_every_cpu_class() {
    const R: &str = "bf16-without-bf16-units";
    for isa in [ICE_LAKE, ZEN3] {
        let a = run(&with_isa(BF16_LOG, isa), None);
        let f = a
            .finding(R)
            .unwrap_or_else(|| panic!("{isa}: {}", reason(&a, R)));
        assert!(f.action.contains("Run in f32"), "{}", f.action);
        // backward weights must not recommend bf16 there either.
        if let Some(b) = a.finding("backward-weights-dominance") {
            assert!(b.action.contains("keep f32"), "{}", b.action);
        }
    }
    // The wrong advice: an AVX10.1 Xeon has bf16 units.
    for isa in [XEON_NO_AMX, ZEN4, SPR, SPR_OLD, AVX10_2] {
        let a = run(&with_isa(BF16_LOG, isa), None);
        assert!(!fired(&a, R), "{isa}");
        assert!(
            reason(&a, R).contains("has bf16 units"),
            "{isa}: {}",
            reason(&a, R)
        );
    }
    let a = run(&with_isa(BF16_LOG, UNKNOWN), None);
    assert!(!fired(&a, R));
    assert!(
        reason(&a, R).contains("profilednn peak"),
        "{}",
        reason(&a, R)
    );
}

/// Whatever the CPU, no advice sends users to Intel Extension for PyTorch (archived since
/// 2026-03-30; its last CPU release is pinned to torch 2.8).
#[test]
fn no_advice_names_ipex() {
    for log in [
        F32_LOG,
        BF16_LOG,
        "advice/tiny_primitives.log",
        "corpus/pytorch/resnet50_bf16_cl.log.gz",
    ] {
        for isa in [SPR, XEON_NO_AMX, ICE_LAKE, ZEN3, ZEN4, UNKNOWN] {
            let a = run(&with_isa(log, isa), Some(machine(100.0, 50.0)));
            let json = serde_json::to_string(&a).unwrap().to_lowercase();
            assert!(!json.contains("ipex"), "{log} / {isa}");
            assert!(
                !json.contains("intel extension for pytorch"),
                "{log} / {isa}"
            );
            for f in &a.findings {
                assert!(!f.action.to_lowercase().contains("ipex"), "{}", f.action);
            }
        }
    }
}
