//! Whole-step projection against real runs (`#[ignore]`: timed, run by `bench/accuracy.sh` on a
//! quiet machine; issue 38). A GPT-style transformer with AdamW, an MLP and a conv-stem
//! transformer (`vit`: convolutions in oneDNN feeding an encoder, issue 52)
//! (`fixtures/torch/train_transformer.py`) are recorded live with `record --torch` as f32 at 2
//! threads, and as each what-if for real: bf16 autocast, 1 thread, half the batch. The f32 run
//! is replayed with `--torch-trace` as itself, `--as bf16`, `--threads 1` and `--batch 4`, and
//! each projected step
//! (`projected_step_ms`) is set against the real run's steady step (the median wall time of its
//! steady iterations, the first left out).
//!
//! Targets: the same run within 10 %, every what-if within 20 %. Each pair is printed with
//! MET or MISSED; a missed pair is recorded and replayed again (at most 3 attempts, each
//! printed, as the other accuracy checks do). Measured on a quiet 2-vCPU Zen 4: two identical
//! real runs back to back differ by up to 18 % (steady medians 169 and 199 ms), two replays of
//! one trace by up to 23 % — every op alike, the VM's speed, not the model's error — so a
//! single attempt can miss a 10 % target whatever the projection does.
//!
//! What fails the test: a replay that does not run, one that carries over more than 5 % of the
//! step's op time (calls it could not rebuild), or a pair off by more than 40 % at every
//! attempt (a regression bound, twice the noise: the f32 → bf16 projection of a transformer
//! was −96 % before the whole step was replayed).
//!
//! `PROFILEDNN_ACCURACY_MODELS=vit,mlp` runs only those models (all by default).
//!
//! Needs `PROFILEDNN_TORCH_PYTHON` (a Python with torch and the `profilednn` package, as
//! `.ci/run` installs) and oneDNN (`PROFILEDNN_DNNL_LIB`), else SKIPPED.

mod common;
use common::{bin, dnnl_lib_or_skip, json_of, root, succeeded, temp_dir};
use profilednn_torchtrace::read_trace;
use profilednn_torchtrace::step_units::{steady_iteration, step_units};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The models: the transformer at a size whose step is mostly its ops (~180 ms on a 2-vCPU
/// Zen 4), and the MLP of 2 × (512 → 2048 → 512) layers on 1024 rows.
const MODELS: &[(&str, &[&str])] = &[
    (
        "gpt",
        &[
            "--variant",
            "f32",
            "--layers",
            "4",
            "--d-model",
            "256",
            "--seq",
            "128",
            "--batch",
            "8",
        ],
    ),
    (
        "mlp",
        &[
            "--variant",
            "mlp",
            "--layers",
            "2",
            "--d-model",
            "512",
            "--seq",
            "128",
            "--batch",
            "8",
        ],
    ),
    (
        "vit",
        &[
            "--variant",
            "vit",
            "--layers",
            "4",
            "--d-model",
            "256",
            "--image",
            "64",
            "--batch",
            "8",
        ],
    ),
];

/// Attempts per pair: a missed pair is recorded and replayed again.
const ATTEMPTS: u32 = 3;

/// The bound the test enforces on a pair's best attempt (see the module's doc).
const REGRESSION: f64 = 0.40;

/// Records `args` with `record --torch`; the log (the trace is beside it).
fn record(py: &str, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let log = dir.join(format!("{name}.log"));
    succeeded(
        bin()
            .args(["record", "--torch", "-o"])
            .arg(&log)
            .args(["--", py])
            .arg(root().join("fixtures/torch/train_transformer.py"))
            .args(["--iterations", "8"])
            .args(args)
            .output()
            .unwrap(),
    );
    log
}

fn trace_of(log: &Path) -> PathBuf {
    log.with_extension("trace.json.gz")
}

/// The real run's steady step: the median wall time of its steady iterations.
fn steady_step_ms(log: &Path) -> f64 {
    let t = read_trace(&trace_of(log)).unwrap();
    steady_iteration(&t).expect("iteration ranges").wall_ms
}

/// The real run's steady iteration by cost family (`gemm`, …, `other` for ops without one) and
/// the time between its ops (`outside_ops`), as the projection's `by_family` and `by_phase`
/// split the projected step: where an error comes from.
fn real_by_family(log: &Path) -> BTreeMap<String, f64> {
    let path = trace_of(log);
    let t = read_trace(&path).unwrap();
    let range = steady_iteration(&t).expect("iteration ranges");
    let units = step_units(&path, &range).unwrap();
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    for u in &units.units {
        *m.entry(u.family.clone().unwrap_or_else(|| "other".into()))
            .or_default() += u.logged_ms;
    }
    m.insert("outside_ops".into(), units.outside_units_ms());
    m
}

/// One line per family: projected against real, ms.
fn by_family_line(p: &serde_json::Value, real: &BTreeMap<String, f64>) -> String {
    let step = &p["step"];
    let projected = |k: &str| -> f64 {
        if k == "outside_ops" {
            step["by_phase"][k]["projected_ms"].as_f64().unwrap_or(0.0)
        } else {
            step["by_family"][k]["projected_ms"].as_f64().unwrap_or(0.0)
        }
    };
    real.iter()
        .map(|(k, r)| format!("{k} {:.1}/{r:.1}", projected(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Replays `base` with `--torch-trace` and `what_if`, projects it; (projected, logged step ms,
/// share of the ops' logged time carried over, the projection).
fn project(
    lib: &str,
    base: &Path,
    dir: &Path,
    name: &str,
    what_if: &[&str],
) -> (f64, f64, f64, serde_json::Value) {
    let out = dir.join(format!("{name}.replay.json"));
    succeeded(
        bin()
            .arg("replay")
            .arg(base)
            .arg("--torch-trace")
            .arg(trace_of(base))
            .args(["--dnnl-lib", lib, "--no-progress", "-o"])
            .arg(&out)
            .args(what_if)
            .output()
            .unwrap(),
    );
    let p = json_of(&[
        "project",
        &base.display().to_string(),
        "--replay",
        &out.display().to_string(),
        "--json",
    ]);
    let step = &p["step"];
    let ops_logged = step["replayed_ops"]["logged_ms"].as_f64().unwrap()
        + step["carried_over_ms"].as_f64().unwrap();
    (
        p["projected_step_ms"].as_f64().unwrap(),
        p["logged_step_ms"].as_f64().unwrap(),
        step["carried_over_ms"].as_f64().unwrap() / ops_logged.max(1e-9),
        p,
    )
}

#[test]
#[ignore = "timed: run by bench/accuracy.sh on a quiet machine"]
fn whole_step_projections_against_real_runs() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let Some(py) = std::env::var("PROFILEDNN_TORCH_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        println!("SKIPPED: whole-step accuracy needs PROFILEDNN_TORCH_PYTHON (a Python with torch and profilednn)");
        return;
    };
    let dir = temp_dir();
    println!(
        "whole step: CPU {}, load {}",
        profilednn_machine::cpu::model_name().unwrap_or_default(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    // (what-if flags, the real run's extra arguments, target).
    let pairs: &[(&str, &[&str], &[&str], f64)] = &[
        ("as recorded", &[], &[], 0.10),
        ("--as bf16", &["--as", "bf16"], &["--bf16"], 0.20),
        (
            "--threads 1",
            &["--threads", "1"],
            &["--threads", "1"],
            0.20,
        ),
        // Half the recorded batch (8): the real run's `--batch 4` comes last and wins. The
        // replay's `--batch` counts the tensors' outermost dimension (the MLP's is its rows:
        // batch × seq), so its value is the model's own (`half_batch`).
        ("--batch 4", &["--batch"], &["--batch", "4"], 0.20),
    ];
    // Pairs off by more than the regression bound at every attempt: every pair is measured
    // and printed before the test fails on them.
    let mut regressed: Vec<String> = Vec::new();
    let only = std::env::var("PROFILEDNN_ACCURACY_MODELS").unwrap_or_default();
    for (model, args) in MODELS
        .iter()
        .filter(|(m, _)| only.is_empty() || only.split(',').any(|o| o == *m))
    {
        // The MLP's tensors lead with its rows (batch 4 × seq 128 = 512), the GPT's with the
        // batch; measured: the MLP replayed with `--batch 4` read its batch as 1024 rows.
        let half_batch = if *model == "mlp" { "512" } else { "4" };
        for (what, flags, real_args, target) in pairs {
            let mut flags: Vec<&str> = flags.to_vec();
            if flags == ["--batch"] {
                flags.push(half_batch);
            }
            let flags = &flags[..];
            let mut best = f64::INFINITY;
            for attempt in 1..=ATTEMPTS {
                let tag = format!("{model}-{}-{attempt}", what.replace([' ', '-'], ""));
                let base = record(&py, &dir, &format!("{tag}-base"), args);
                let (projected, logged, carried, p) = project(&lib, &base, &dir, &tag, flags);
                assert!(
                    carried < 0.05,
                    "{model} {what}: {:.1} % of the ops' time could not be replayed",
                    carried * 100.0
                );
                let real_log = if real_args.is_empty() {
                    base.clone()
                } else {
                    let mut a: Vec<&str> = args.to_vec();
                    a.extend(real_args.iter().copied());
                    record(&py, &dir, &format!("{tag}-real"), &a)
                };
                let real = steady_step_ms(&real_log);
                let err = projected / real - 1.0;
                let met = err.abs() <= *target;
                best = best.min(err.abs());
                println!(
                    "whole step {model} {what:<12} attempt {attempt}: projected {projected:7.1} ms \
                     (the replayed iteration logged {logged:7.1}) vs real {real:7.1} ms: {:+.1} % \
                     {} ({:.0} % target)",
                    err * 100.0,
                    if met { "MET" } else { "MISSED" },
                    target * 100.0
                );
                println!(
                    "  by family, projected/real ms: {}",
                    by_family_line(&p, &real_by_family(&real_log))
                );
                if met {
                    break;
                }
            }
            if best > REGRESSION {
                regressed.push(format!(
                    "{model} {what}: off by {:.1} % at best over {ATTEMPTS} attempts",
                    best * 100.0
                ));
            }
        }
    }
    assert!(
        regressed.is_empty(),
        "more than {:.0} % off at every attempt: {}",
        REGRESSION * 100.0,
        regressed.join("; ")
    );
}
