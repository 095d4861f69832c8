//! What-if accuracy against real pairs (`#[ignore]`: timed, run by `bench/accuracy.sh` on a
//! quiet machine). One PyTorch resnet18 training script (`fixtures/whatif/train_resnet18.py`)
//! run five ways on the same machine; the f32 NCHW 2-thread run is rewritten into each of the
//! other four and replayed here, and the projection is set against the real run's
//! steady-state oneDNN time per iteration:
//!
//! | what-if | real run |
//! |---|---|
//! | `--layout channels-last` | f32 channels-last |
//! | `--as bf16 --layout channels-last` | bf16 autocast channels-last |
//! | `--threads 1` | f32 NCHW, 1 thread |
//! | `--batch 4` | f32 NCHW, batch 4 |
//!
//! The target (issue 14) is 20 %: printed as MET or MISSED for each pair, every figure beside
//! it; a pair not met is measured again (with live PyTorch its f32 run and real run are
//! recorded again, in the same minutes as the replay; at most 3 attempts, each printed); for the f32 run replayed as itself, the same-machine targets (10 % overall, every
//! kind+propagation group with ≥ 5 % of the time within 25 %) are printed too, and a run that
//! meets 20 % but not them is measured again the same way. Enforced: the direction of the bf16 change — a CPU without bf16 units runs bf16 slower
//! (oneDNN emulates it), and the projection must say so, as the real run does (bf16 replay vs
//! the f32 replay, real bf16 run vs real f32 run: like with like), unless the real pair is a
//! tie (its ratio within the spread of the f32 run recorded again in the same test: a VM
//! where bf16 neither pays nor costs has no direction to predict). Where oneDNN has no bf16 at
//! all (AVX2-only CPUs), PyTorch runs autocast's convolutions in its own kernels and the real
//! run has no oneDNN time: the direction is then that of the whole training step, the
//! projected step against the script's own step times (live runs only; on an AMD EPYC Zen 3 the
//! real bf16 step read 5.0–5.4× the f32 one, projected 11.2–11.6× the f32 replay's: "slower", no
//! estimate of how much).
//! On a CPU with bf16 units, with live PyTorch, the bf16 pair is also recorded and replayed with
//! oneDNN capped below bf16 (`ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI`): the slow-down a CPU without
//! them shows must be predicted as one too (enforced; the 20 % figure printed). AMD EPYC Zen 4:
//! real 1.92× the f32 run, projected 1.80× the f32 replay, −0.3 % against the real run.
//!
//! The pairs are recorded afresh when `PROFILEDNN_TORCH_PYTHON` names a Python with torch and
//! torchvision (bench/accuracy.sh sets it when one is found); else the committed fixtures
//! (recorded on this project's 2-vCPU Xeon, PyTorch 2.15) are used — meaningful only on that
//! machine. The projection of the bf16 pair leaves out autocast's casts: PyTorch performs
//! them with `aten::to`, outside oneDNN, so the real run's oneDNN time does not hold them.

mod common;
use common::{bin, dnnl_lib_or_skip, json_of, root, succeeded, temp_dir};
use profilednn_replay::stability::{verdict, Verdict};
use std::path::{Path, PathBuf};

/// One what-if replay of `base` and its projection: the projection JSON, the logged f32
/// ms/iteration, autocast's casts, the projected oneDNN ms/iteration without them, and the
/// real run's (`real`, its log projected with the same replay: only its logged side is read).
fn what_if(
    lib: &str,
    base: &str,
    real: &Path,
    dir: &Path,
    name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> (serde_json::Value, f64, f64, f64, f64) {
    let out = dir.join(format!("{}.json", name.replace(' ', "_")));
    succeeded(
        bin()
            .args(["replay", base, "--dnnl-lib", lib, "--no-progress", "-o"])
            .arg(&out)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap(),
    );
    let out = out.to_str().unwrap();
    print_heap(name, out);
    let from = json_of(&["project", base, "--replay", out, "--json"]);
    let logged = from["logged_onednn_ms"].as_f64().unwrap();
    let casts = from["what_if"]["autocast_casts_ms"].as_f64().unwrap_or(0.0);
    let projected = from["projected_onednn_ms"].as_f64().unwrap() - casts;
    if !has_onednn_lines(real) {
        // PyTorch ran none of the real run's work in oneDNN (bf16 autocast where oneDNN has
        // no bf16): there is no oneDNN time to compare with.
        return (from, logged, casts, projected, f64::NAN);
    }
    // Another log's replay, hence --allow-mismatch.
    let against = json_of(&[
        "project",
        real.to_str().unwrap(),
        "--replay",
        out,
        "--allow-mismatch",
        "--json",
    ]);
    let real_ms = against["logged_onednn_ms"].as_f64().unwrap();
    (from, logged, casts, projected, real_ms)
}

/// The heap a replay's per-call buffers came from and why (`sequence.heap`, `heap_reason`):
/// printed for every replay, so that a projection far off can be told from a heap chosen
/// otherwise for the same base log.
fn print_heap(name: &str, results: &str) {
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    let s = &r["sequence"];
    println!(
        "    replay {name}: heap {} ({})",
        s["heap"].as_str().unwrap_or("none"),
        s["heap_reason"].as_str().unwrap_or("")
    );
}

/// The replay's dispersion as the projection reports it.
fn dispersion(projection: &serde_json::Value) -> Option<f64> {
    projection["replay_dispersion"].as_f64()
}

fn percent(d: Option<f64>) -> String {
    d.map_or("?".into(), |d| format!("{:.1}%", d * 100.0))
}

/// Iterations of each real run. The first two or three of the script's iterations run
/// 1.3–1.6× the later ones (measured on a 2-vCPU AMD EPYC Zen 3: 167 139 136 then 114–136 ms at
/// 2 threads; 234 165 then 145–211 at 1), and the logged figure is each problem's median call:
/// with the script's default 5 iterations those slow ones were most of the calls, and the real
/// runs read 20–40 % slow (base f32 runs of 145–162 ms against 102–132 with 12 iterations).
/// The logged figure now leaves each problem's first third of calls out
/// (`logged::warm_up_calls`); 12 iterations still leave 8 steady iterations' calls.
const REAL_ITERATIONS: &str = "12";

/// The bf16 what-if: autocast's precision and channels-last, at the base run's 2 threads.
const BF16_CL: &[&str] = &[
    "--as",
    "bf16",
    "--layout",
    "channels-last",
    "--threads",
    "2",
];

fn record(py: &str, dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let out = succeeded(
        std::process::Command::new(py)
            .arg(root().join("fixtures/whatif/train_resnet18.py"))
            .args(["--iterations", REAL_ITERATIONS])
            .args(args)
            .env("ONEDNN_VERBOSE", "1")
            .env("ONEDNN_VERBOSE_TIMESTAMP", "1")
            .envs(env.iter().copied())
            .output()
            .unwrap(),
    );
    let p = dir.join(format!("{name}.log"));
    std::fs::write(&p, &out.stdout).unwrap();
    p
}

fn has_bf16_units() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| c.contains(" avx512_bf16") || c.contains(" amx_bf16"))
        .unwrap_or(false)
}

/// The text of a log, gzipped or not.
fn log_text(log: &Path) -> String {
    use std::io::Read;
    let bytes = std::fs::read(log).unwrap();
    let mut text = String::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    text
}

/// Whether the log holds a oneDNN primitive execution.
fn has_onednn_lines(log: &Path) -> bool {
    log_text(log)
        .lines()
        .any(|l| l.starts_with("onednn_verbose") && l.contains(",exec,"))
}

/// Whether the CPU a log was recorded on had bf16 units, from oneDNN's `isa:` line
/// ("… with bfloat16 …" on AVX512-BF16 and AMX CPUs).
fn recorded_with_bf16_units(log: &std::path::Path) -> bool {
    log_text(log)
        .lines()
        .find(|l| l.contains(",info,cpu,isa:"))
        .is_some_and(|l| l.contains("bfloat16"))
}

#[test]
#[ignore = "timed: run by bench/accuracy.sh on a quiet machine"]
fn what_if_projections_against_real_runs() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let dir = temp_dir();
    // The script's runs: the f32 NCHW base, then the real run of each pair.
    let runs: [(&str, &[&str]); 5] = [
        ("f32-nchw", &["--threads", "2"]),
        ("f32-cl", &["--threads", "2", "--channels-last"]),
        ("bf16-cl", &["--threads", "2", "--channels-last", "--bf16"]),
        ("f32-nchw-1t", &["--threads", "1"]),
        ("f32-nchw-b4", &["--threads", "2", "--batch", "4"]),
    ];
    let live = std::env::var("PROFILEDNN_TORCH_PYTHON")
        .ok()
        .filter(|py| !py.is_empty());
    let logs: Vec<PathBuf> = match &live {
        Some(py) => {
            println!("what-if pairs recorded afresh with {py}");
            runs.iter()
                .map(|(n, a)| record(py, &dir, n, a, &[]))
                .collect()
        }
        None => {
            println!("what-if pairs: the committed fixtures (fixtures/whatif; set PROFILEDNN_TORCH_PYTHON to record afresh)");
            [
                "f32-nchw",
                "f32-cl",
                "bf16-cl",
                "f32-nchw-1t",
                "f32-nchw-b4",
            ]
            .iter()
            .map(|n| root().join(format!("fixtures/whatif/{n}.log.gz")))
            .collect()
        }
    };
    let pairs: [(&str, &[&str], usize); 4] = [
        (
            "f32 channels-last",
            &["--layout", "channels-last", "--threads", "2"],
            1,
        ),
        ("bf16 autocast channels-last", BF16_CL, 2),
        ("f32 NCHW 1 thread", &["--threads", "1"], 3),
        ("f32 NCHW batch 4", &["--batch", "4", "--threads", "2"], 4),
    ];
    // An identity what-if (`--as f32`) at 2 threads: the same-machine figure, for reference.
    let mut all = vec![(
        "f32 NCHW (same run)",
        &["--as", "f32", "--threads", "2"][..],
        0usize,
    )];
    all.extend(pairs);
    println!("CPU: {}; bf16 units: {}", cpu(), has_bf16_units());
    // The f32 run as logged, and as replayed here (the identity what-if, first).
    let mut base_logged = None;
    let mut base_replayed = None;
    let mut bf16_direction_ok = true;
    // Whether the bf16 pair's projection was within 20 % of its real run (live pairs only).
    let mut bf16_met = true;
    let mut bf16_unavailable = false;
    // The bf16 direction checked on the training step (oneDNN has no bf16 on this CPU).
    let mut bf16_step_checked = false;
    // The f32 run the identity pair ended with (recorded again on a miss): the bf16 pair's
    // base, so that its direction compares with that run and its replay.
    let mut identity_base: Option<PathBuf> = None;
    // Every recording of the f32 NCHW 2-thread run made in this test (its oneDNN ms per
    // iteration as logged) and the real bf16 / real f32 ratio of each bf16 attempt: the
    // direction of the bf16 change is a fact of this CPU only where the real pair differs by
    // more than the f32 run differs from itself (`bf16_direction_is_a_tie`).
    let mut f32_repeats: Vec<f64> = Vec::new();
    // (real bf16 / real f32, projected bf16 / f32 replay) of each bf16 attempt.
    let mut real_ratios: Vec<(f64, f64)> = Vec::new();
    for (name, args, real) in all {
        // A projection not within the 20 % target is measured again (at most 3 attempts):
        // with live PyTorch, the f32 run and the real run are recorded again and replayed in
        // the same minutes (on a shared VM one run of a pair alone read 1.3× the other's
        // phase), else the replay alone is repeated. Every attempt is printed.
        let mut attempt = 0;
        let first_base = match &identity_base {
            Some(b) if name.starts_with("bf16") => b.clone(),
            _ => logs[0].clone(),
        };
        let (mut base_log, mut real_log) = (first_base, logs[real].clone());
        let (from, logged, casts, projected, real_ms) = loop {
            attempt += 1;
            // The bf16 pair keeps its recordings here: its direction check compares it with
            // the identity pair's f32 run and replay (the same base log); with live PyTorch a
            // miss is recorded again as a whole pair after this loop (`bf16_pair_again`).
            let rerecord = attempt > 1 && !name.starts_with("bf16");
            if let (Some(py), true) = (&live, rerecord) {
                let tag = |n: &str| format!("{n}-{}-{attempt}", name.replace(' ', "_"));
                base_log = record(py, &dir, &tag(runs[0].0), runs[0].1, &[]);
                real_log = if real == 0 {
                    base_log.clone()
                } else {
                    record(py, &dir, &tag(runs[real].0), runs[real].1, &[])
                };
            }
            let m = what_if(
                &lib,
                base_log.to_str().unwrap(),
                &real_log,
                &dir,
                name,
                args,
                &[],
            );
            let (_, logged, _, projected, real_ms) = m;
            if real == 0 && live.is_some() {
                f32_repeats.push(logged);
            }
            if real_ms.is_nan() {
                break m;
            }
            let err = projected / real_ms - 1.0;
            let v = verdict(err, dispersion(&m.0), 0.20);
            // With live PyTorch the bf16 pair is recorded again as a whole below (its direction
            // needs the f32 replay of the same base), not replayed again here. The same run
            // replayed (`real == 0`) is measured again until it meets the same-machine targets
            // (10 %, every group with ≥ 5 % of the time within 25 %), not only the 20 %.
            let same_run_short =
                real == 0 && (err.abs() > 0.10 || !group_misses(&m.0, m.1).is_empty());
            if (v == Verdict::Met && !same_run_short)
                || attempt == 3
                || (live.is_some() && name.starts_with("bf16"))
            {
                break m;
            }
            println!(
                "what-if {name:<28} attempt {attempt}: {:+.1}% ± {} (real {real_ms:.2} ms/iter): {}, {}",
                err * 100.0,
                percent(dispersion(&m.0)),
                match v {
                    Verdict::Missed => "missed against 20 %",
                    Verdict::Undecided => "undecided against 20 %",
                    Verdict::Met => "met against 20 %, the same-run targets (10 %, groups 25 %) not",
                },
                if live.is_some() && !name.starts_with("bf16") {
                    "the f32 run and the real run recorded again and replayed"
                } else {
                    "replayed again"
                }
            );
        };
        if real_ms.is_nan() {
            // Only a bf16 run whose what-if oneDNN cannot run here may leave oneDNN unused.
            let unavailable = from["what_if"]["unavailable_here_calls"]
                .as_u64()
                .unwrap_or(0);
            assert!(
                name.starts_with("bf16") && unavailable > 0,
                "the real {name} run has no oneDNN line"
            );
            println!(
                "what-if {name:<28} [{}]: the real run executed nothing in oneDNN (PyTorch runs autocast's bf16 convolutions in its own kernels where oneDNN has no bf16); the projection flags {unavailable} calls per iteration as having no bf16 implementation in oneDNN here (no estimate of the time; advise does not recommend bf16)",
                args.join(" ")
            );
            // Its direction still stands: advise calls bf16 a slow-down here (not recommended,
            // no estimate of how much), and the training step the script times itself says
            // whether it is one.
            if let Some(ok) = step_direction(&from, base_replayed, &base_log, &real_log, &live) {
                bf16_direction_ok = ok;
                bf16_step_checked = true;
            }
            bf16_unavailable = true;
            continue;
        }
        if real == 0 {
            identity_base.get_or_insert(base_log.clone());
        }
        base_logged.get_or_insert(logged);
        base_replayed.get_or_insert(projected);
        let err = (projected / real_ms - 1.0) * 100.0;
        let d = dispersion(&from);
        if name.starts_with("bf16") && live.is_some() {
            bf16_met = verdict(err / 100.0, d, 0.20) == Verdict::Met;
        }
        println!(
            "what-if {:<28} [{}]: logged f32 NCHW {logged:.2} ms/iter -> projected {projected:.2} ± {} (+ autocast casts {casts:.2}) vs real {real_ms:.2}: {err:+.1}% {}",
            name,
            args.join(" "),
            percent(d),
            match verdict(err / 100.0, d, 0.20) {
                Verdict::Met => "MET (20 %)",
                Verdict::Missed => "MISSED (20 %)",
                Verdict::Undecided => "UNDECIDED (20 %: within the replay's dispersion after 3 replays)",
            }
        );
        for g in from["groups"].as_array().unwrap() {
            println!(
                "    {:<12} {:<18} logged {:>9.3} projected {:>9.3}",
                g["prim_kind"].as_str().unwrap_or(""),
                g["prop_kind"].as_str().unwrap_or(""),
                g["logged_ms"].as_f64().unwrap_or(0.0),
                g["projected_ms"].as_f64().unwrap_or(0.0)
            );
        }
        if real == 0 {
            // The same run replayed: the same-machine targets for a real PyTorch run.
            let misses = group_misses(&from, logged);
            println!(
                "    target for the same run (10 % overall, groups with >= 5 % of the time within 25 %): {}",
                if err.abs() <= 10.0 && misses.is_empty() {
                    "met".to_string()
                } else if misses.is_empty() {
                    "MISSED (overall)".to_string()
                } else {
                    format!("MISSED (groups off: {})", misses.join(", "))
                }
            );
        }
        let unavailable = from["what_if"]["unavailable_here_calls"]
            .as_u64()
            .unwrap_or(0);
        if name.starts_with("bf16") && unavailable > 0 {
            // An AVX2-only CPU: oneDNN has no bf16 convolution here, the framework runs them
            // outside oneDNN (PyTorch's own kernels), and the projection says it is no
            // estimate of the oneDNN time: only the training step's direction is checked.
            println!(
                "    the bf16 oneDNN time: {unavailable} calls per iteration have no bf16 implementation in oneDNN on this CPU (the projection says it is no estimate; advise does not recommend bf16)"
            );
            if let Some(ok) = step_direction(&from, base_replayed, &base_log, &real_log, &live) {
                bf16_direction_ok = ok;
                bf16_step_checked = true;
            }
            bf16_unavailable = true;
        } else if name.starts_with("bf16") {
            // Like with like: the bf16 replay against the f32 replay (same machine, same
            // moment), the real bf16 run against the real f32 run.
            let (b, r) = (base_logged.unwrap(), base_replayed.unwrap());
            let predicted_slower = projected > r;
            let real_slower = real_ms > b;
            println!(
                "    bf16 on a CPU {} bf16 units: real {:.2}x the real f32 run, projected {:.2}x the f32 replay: direction {}",
                if has_bf16_units() { "with" } else { "without" },
                real_ms / b,
                projected / r,
                if predicted_slower == real_slower { "predicted" } else { "WRONG" }
            );
            bf16_direction_ok = predicted_slower == real_slower;
            real_ratios.push((real_ms / b, projected / r));
        }
    }
    if let (Some(py), true) = (&live, has_bf16_units()) {
        no_bf16_units_pair(py, &lib, &dir, runs[0].1, runs[2].1);
    }
    if bf16_unavailable && !bf16_step_checked {
        return;
    }
    // The direction is a property of the CPU: compared only when the real pair was recorded
    // on a CPU that, like this one, has (or lacks) bf16 units (the step check runs only on
    // pairs recorded here).
    let recorded_with = recorded_with_bf16_units(&logs[2]);
    if !bf16_step_checked && recorded_with != has_bf16_units() {
        println!(
            "    SKIPPED: the bf16 direction check: the real pair was recorded on a CPU {} bf16 units, this one {} them (set PROFILEDNN_TORCH_PYTHON to record the pairs here)",
            if recorded_with { "with" } else { "without" },
            if has_bf16_units() { "has" } else { "lacks" }
        );
        return;
    }
    if (!bf16_direction_ok || !bf16_met) && !bf16_step_checked {
        // Measured again, as the other pairs are: on a shared VM one real run alone can fall in
        // a slow phase (a CI run here read the real bf16 run at 1.31× its f32 run, every
        // convolution group slower, where three recordings within the hour read 0.65–1.02×;
        // another 1.03×, against 0.73× recorded again minutes later). Both real runs are
        // recorded again together and both replays made again, until the direction was
        // predicted once and the projection is within 20 %.
        if let Some(py) = &live {
            for attempt in 2..=3 {
                println!(
                    "    the bf16 pair ({}): the f32 run and the real bf16 run recorded again and both replayed (attempt {attempt} of 3)",
                    if bf16_direction_ok { "20 % missed" } else { "direction wrong" }
                );
                let (direction, met, f32_logged, real_ratio) =
                    bf16_pair_again(py, &lib, &dir, runs[0].1, runs[2].1, attempt);
                f32_repeats.push(f32_logged);
                real_ratios.extend(real_ratio);
                bf16_direction_ok |= direction;
                if bf16_direction_ok && met {
                    break;
                }
            }
        }
    }
    if !bf16_direction_ok && bf16_direction_is_a_tie(&f32_repeats, &real_ratios) {
        return;
    }
    assert!(
        bf16_direction_ok,
        "the projection gets the direction of the bf16 change wrong"
    );
}

/// Whether the real bf16 pair has no direction to predict on this machine: every attempt's
/// real bf16 run differs from its real f32 run by less than the f32 run, recorded again in
/// the same test, differs from itself (at least two recordings), and so does every projected
/// ratio (a projection far off the mark in either direction is never excused). On this project's 2-vCPU
/// Emerald Rapids guest with AMX the bf16 ResNet-18 (batch 8, 64²) read 0.85–1.39× its f32
/// run across recordings, while the f32 run alone read 57–74 ms: a CI run failed on a real
/// ratio of 1.22× then 1.05× whose bf16 projections were within 6 % of the real runs. Where
/// bf16 changes the step by more than that (2.1–8.0× without bf16 units), the direction is
/// checked. Prints its verdict.
fn bf16_direction_is_a_tie(f32_repeats: &[f64], real_ratios: &[(f64, f64)]) -> bool {
    let repeats: Vec<f64> = f32_repeats.iter().copied().filter(|v| *v > 0.0).collect();
    if repeats.len() < 2 || real_ratios.is_empty() {
        return false;
    }
    let (lo, hi) = repeats
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let spread = hi / lo;
    let furthest = real_ratios
        .iter()
        .flat_map(|(real, projected)| [*real, *projected])
        .map(|r| r.max(1.0 / r))
        .fold(1.0f64, f64::max);
    let tie = furthest <= spread;
    println!(
        "    the bf16 direction: the real bf16 run read {} its f32 run (projected: the bf16 replay against the f32 replay); the f32 run recorded {} times read {lo:.2}-{hi:.2} ms ({spread:.2}x apart): {}",
        real_ratios
            .iter()
            .map(|(r, p)| format!("{r:.2}x (projected {p:.2}x)"))
            .collect::<Vec<_>>()
            .join(", "),
        repeats.len(),
        if tie {
            "a tie here, real and projected within the f32 run's own spread: the direction is not checked (the 20 % figures above stand)"
        } else {
            "a real or projected ratio outside the f32 run's own spread: the direction is checked"
        }
    );
    tie
}

/// Both replays of a bf16 pair, made from its f32 run with `env`: the f32 run's logged and
/// identity-replayed ms/iteration, then the bf16 what-if's casts, projection and the real bf16
/// run's ms/iteration (`NaN` without oneDNN lines). `tag` names the results files.
fn replay_pair(
    lib: &str,
    dir: &Path,
    f32_log: &Path,
    bf16_log: &Path,
    tag: &str,
    env: &[(&str, &str)],
) -> (f64, f64, f64, f64, f64) {
    let base = f32_log.to_str().unwrap();
    let (_, logged, _, f32_projected, _) = what_if(
        lib,
        base,
        f32_log,
        dir,
        &format!("f32 NCHW {tag}"),
        &["--as", "f32", "--threads", "2"],
        env,
    );
    let (_, _, casts, projected, real_ms) = what_if(
        lib,
        base,
        bf16_log,
        dir,
        &format!("bf16 autocast channels-last {tag}"),
        BF16_CL,
        env,
    );
    (logged, f32_projected, casts, projected, real_ms)
}

/// The bf16 pair recorded and replayed again (the f32 run and its identity replay, the real
/// bf16 run and the bf16 what-if of the new f32 run): whether the direction was predicted,
/// whether the projection is within 20 % of the real run, the new f32 run's logged ms per
/// iteration and the real bf16 / real f32 ratio (none without oneDNN lines).
fn bf16_pair_again(
    py: &str,
    lib: &str,
    dir: &Path,
    f32_args: &[&str],
    bf16_args: &[&str],
    attempt: u32,
) -> (bool, bool, f64, Option<(f64, f64)>) {
    let f32_log = record(py, dir, &format!("f32-nchw-again-{attempt}"), f32_args, &[]);
    let bf16_log = record(py, dir, &format!("bf16-cl-again-{attempt}"), bf16_args, &[]);
    let (logged, f32_projected, casts, projected, real_ms) = replay_pair(
        lib,
        dir,
        &f32_log,
        &bf16_log,
        &format!("again {attempt}"),
        &[],
    );
    if real_ms.is_nan() {
        return (false, false, logged, None);
    }
    let (predicted_slower, real_slower) = (projected > f32_projected, real_ms > logged);
    let met = (projected / real_ms - 1.0).abs() <= 0.20;
    println!(
        "what-if bf16 autocast channels-last  attempt {attempt}: logged f32 NCHW {logged:.2} ms/iter (replayed {f32_projected:.2}) -> projected {projected:.2} (+ autocast casts {casts:.2}) vs real {real_ms:.2}: {:+.1}% {}; real {:.2}x the real f32 run, projected {:.2}x the f32 replay: direction {}",
        (projected / real_ms - 1.0) * 100.0,
        if met { "MET (20 %)" } else { "MISSED (20 %)" },
        real_ms / logged,
        projected / f32_projected,
        if predicted_slower == real_slower { "predicted" } else { "WRONG" }
    );
    (
        predicted_slower == real_slower,
        met,
        logged,
        Some((real_ms / logged, projected / f32_projected)),
    )
}

/// What oneDNN is capped to for the "no bf16 units" pair: AVX-512 with VNNI, no AVX512-BF16 or
/// AMX (PyTorch's bundled oneDNN and the replay's both read it).
const NO_BF16_UNITS: (&str, &str) = ("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_VNNI");

/// The bf16 pair again as on a CPU without bf16 units, on one that has them: the f32 and the
/// bf16 runs recorded, and both replays made, with oneDNN capped below bf16 (`NO_BF16_UNITS`),
/// so that one CI run checks both sides of the validation — a speed-up where bf16 units
/// exist (the pair above), a slow-down predicted as one where they do not (here; enforced, the
/// 20 % figure printed). On an Intel Xeon without bf16 units the real bf16 run was 2.1–8.0× the
/// f32 one and the projection said 2.6–9.1×.
fn no_bf16_units_pair(py: &str, lib: &str, dir: &Path, f32_args: &[&str], bf16_args: &[&str]) {
    let f32_log = record(
        py,
        dir,
        "f32-nchw-no-bf16-units",
        f32_args,
        &[NO_BF16_UNITS],
    );
    let bf16_log = record(
        py,
        dir,
        "bf16-cl-no-bf16-units",
        bf16_args,
        &[NO_BF16_UNITS],
    );
    if recorded_with_bf16_units(&bf16_log) {
        println!(
            "what-if bf16 without bf16 units: SKIPPED: {}={} did not take bf16 away from PyTorch's oneDNN (its isa: line still names bfloat16)",
            NO_BF16_UNITS.0, NO_BF16_UNITS.1
        );
        return;
    }
    let (logged, f32_projected, casts, projected, real_ms) = replay_pair(
        lib,
        dir,
        &f32_log,
        &bf16_log,
        "without bf16 units",
        &[NO_BF16_UNITS],
    );
    if real_ms.is_nan() {
        println!(
            "what-if bf16 without bf16 units: SKIPPED: with {}={} PyTorch ran the bf16 run outside oneDNN (no exec line to compare with)",
            NO_BF16_UNITS.0, NO_BF16_UNITS.1
        );
        return;
    }
    let (predicted_slower, real_slower) = (projected > f32_projected, real_ms > logged);
    println!(
        "what-if bf16 autocast channels-last, oneDNN capped at {} (no bf16 units): logged f32 NCHW {logged:.2} ms/iter (replayed {f32_projected:.2}) -> projected {projected:.2} (+ autocast casts {casts:.2}) vs real {real_ms:.2}: {:+.1}% ({}); real {:.2}x the real f32 run, projected {:.2}x the f32 replay: direction {}",
        NO_BF16_UNITS.1,
        (projected / real_ms - 1.0) * 100.0,
        if (projected / real_ms - 1.0).abs() <= 0.20 { "MET (20 %)" } else { "MISSED (20 %)" },
        real_ms / logged,
        projected / f32_projected,
        if predicted_slower == real_slower { "predicted" } else { "WRONG" }
    );
    assert_eq!(
        predicted_slower, real_slower,
        "without bf16 units the projection gets the direction of the bf16 change wrong"
    );
}

/// The bf16 change's direction on the whole training step, where oneDNN has no bf16 and the
/// real bf16 run's convolutions ran in the framework's own kernels: the projected step (the
/// bf16 replay plus the time outside oneDNN, `projected_total_ms`) against the f32 replay's
/// (the identity pair's projection plus the same outside time), and the real bf16 run's step
/// against the real f32 run's (the script's own step times). What it checks is advise's verdict
/// ("not recommended: projected slower") against what the machine does; the projected figure
/// itself is no estimate here (calls oneDNN cannot run are priced at their f32 time, its f32 ↔
/// bf16 reorders run reference code). `None` (printed as SKIPPED) without live runs, step
/// times or timestamps.
fn step_direction(
    from: &serde_json::Value,
    base_replayed: Option<f64>,
    base_log: &Path,
    real_log: &Path,
    live: &Option<String>,
) -> Option<bool> {
    let measured = (
        live.as_ref(),
        step_ms(base_log),
        step_ms(real_log),
        from["residual_ms"].as_f64(),
        from["projected_total_ms"].as_f64(),
        base_replayed,
    );
    let (Some(_), Some(f32_step), Some(bf16_step), Some(outside), Some(bf16_proj), Some(f32_rep)) =
        measured
    else {
        println!(
            "    SKIPPED: the bf16 direction on the training step: it needs runs recorded here with timestamps and the script's `# iteration` lines, and the f32 replay"
        );
        return None;
    };
    let f32_proj = f32_rep + outside;
    let (predicted_slower, real_slower) = (bf16_proj > f32_proj, bf16_step > f32_step);
    println!(
        "    bf16 where oneDNN has none: real training step {bf16_step:.1} ms = {:.2}x the real f32 run's {f32_step:.1}; projected step {bf16_proj:.1} ms = {:.2}x the f32 replay's {f32_proj:.1}: direction {}",
        bf16_step / f32_step,
        bf16_proj / f32_proj,
        if predicted_slower == real_slower { "predicted" } else { "WRONG" }
    );
    Some(predicted_slower == real_slower)
}

/// The training script's own time per training step (its `# iteration N: T ms` lines): the
/// median after the first third of them (the warm-up, as `project` leaves it out).
fn step_ms(log: &Path) -> Option<f64> {
    let mut ms: Vec<f64> = log_text(log)
        .lines()
        .filter_map(|l| l.strip_prefix("# iteration ")?.split(": ").nth(1))
        .filter_map(|t| t.strip_suffix(" ms")?.parse().ok())
        .collect();
    let warm = profilednn_replay::logged::warm_up_calls(ms.len() as u64) as usize;
    let mut steady = ms.split_off(warm);
    steady.sort_by(f64::total_cmp);
    steady.get(steady.len() / 2).copied()
}

/// The kind+propagation groups of a same-log projection with at least 5 % of the logged time
/// that are off by more than 25 %, each with its error.
fn group_misses(projection: &serde_json::Value, logged: f64) -> Vec<String> {
    projection["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| {
            let l = g["logged_ms"].as_f64()?;
            let p = g["projected_ms"].as_f64()?;
            (l >= 0.05 * logged && (p / l - 1.0).abs() > 0.25).then(|| {
                format!(
                    "{} {} {:+.1}%",
                    g["prim_kind"].as_str().unwrap_or(""),
                    g["prop_kind"].as_str().unwrap_or(""),
                    (p / l - 1.0) * 100.0
                )
            })
        })
        .collect()
}

fn cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "?".into())
}

#[test]
fn a_real_bf16_pair_within_the_f32_runs_own_spread_is_a_tie_and_one_outside_it_is_not() {
    // The failing CI run's figures: f32 recorded at 57.09 and 73.73 ms (1.29x apart), real
    // ratios 1.22 and 1.05, projected 0.79 and 0.89.
    assert!(bf16_direction_is_a_tie(
        &[57.09, 73.73],
        &[(1.22, 0.79), (1.05, 0.89)]
    ));
    // A slower bf16 run well outside the f32 run's spread (no bf16 units): checked.
    assert!(!bf16_direction_is_a_tie(&[57.09, 60.0], &[(2.1, 0.9)]));
    // A faster bf16 run outside the spread (1 / 0.6 = 1.67 > 1.29): checked.
    assert!(!bf16_direction_is_a_tie(
        &[57.09, 73.73],
        &[(1.05, 0.9), (0.6, 0.9)]
    ));
    // A real tie, a projection far off it (3x slower): checked.
    assert!(!bf16_direction_is_a_tie(&[57.09, 73.73], &[(1.05, 3.0)]));
    // One f32 recording gives no spread: checked.
    assert!(!bf16_direction_is_a_tie(&[57.09], &[(1.01, 1.0)]));
}
