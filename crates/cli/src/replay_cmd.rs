//! `profilednn replay LOG`: re-create and time every unique primitive through oneDNN here.

use crate::output::outln;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_replay::native::run::Timing;
use profilednn_replay::native::{replay_profile, Replay, Session, SCHEMA};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ReplayArgs {
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Results file (JSON, `profilednn.replay.v1`), input of `profilednn project --replay`.
    #[arg(long, short = 'o', default_value = "replay.json")]
    output: PathBuf,
    /// oneDNN library to load (default: $PROFILEDNN_DNNL_LIB, a pip-installed onednn-cpu-gomp,
    /// then the system library path).
    #[arg(long, value_name = "PATH")]
    dnnl_lib: Option<PathBuf>,
    /// OpenMP threads for oneDNN (sets OMP_NUM_THREADS; default: the runtime's own choice).
    #[arg(long)]
    threads: Option<usize>,
    /// Bind threads to cores (OMP_PROC_BIND=close, OMP_PLACES=cores).
    #[arg(long)]
    bind: bool,
    /// Replay only the N problems with the most time in the log.
    #[arg(long)]
    top: Option<usize>,
    #[arg(long, default_value_t = Timing::default().warmup)]
    warmup: u32,
    #[arg(long, default_value_t = Timing::default().min_runs)]
    min_runs: u32,
    #[arg(long, default_value_t = Timing::default().max_runs)]
    max_runs: u32,
    /// Keep timing a primitive until this many ms were measured.
    #[arg(long, default_value_t = Timing::default().min_time_ms)]
    min_time_ms: f64,
    /// Evict caches before each timed run (writes 2× the last-level cache size elsewhere), as
    /// inside a training step; `--warm-cache` times back-to-back runs instead.
    #[arg(long, conflicts_with = "cold_cache")]
    warm_cache: bool,
    #[arg(long, hide = true)]
    cold_cache: bool,
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    // OpenMP reads these when oneDNN's runtime starts, so before the library is loaded.
    if let Some(t) = args.threads {
        std::env::set_var("OMP_NUM_THREADS", t.to_string());
    }
    if args.bind {
        std::env::set_var("OMP_PROC_BIND", "close");
        std::env::set_var("OMP_PLACES", "cores");
    }
    let session = match Session::open(args.dnnl_lib.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("profilednn: error: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let mut profile = crate::load::profiles(
        std::slice::from_ref(&args.log),
        None,
        None,
        args.no_progress,
    )?
    .remove(0);
    if let Some(n) = args.top {
        // Keep the entries of the heaviest problems.
        let keep: std::collections::HashSet<String> = profilednn_replay::native::problems(&profile)
            .into_iter()
            .take(n)
            .map(|x| x.key)
            .collect();
        profile.entries.retain(|e| {
            let key = profilednn_replay::benchdnn::line(&e.primitive)
                .map(|(d, l)| format!("--{d} {l}"))
                .unwrap_or_default();
            keep.contains(&key)
        });
    }
    let timing = Timing {
        warmup: args.warmup,
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        min_time_ms: args.min_time_ms,
        cold_cache_bytes: if args.warm_cache { 0 } else { llc_bytes() * 2 },
    };
    let bar = (!args.no_progress && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template("{msg:40!} [{bar:30}] {pos}/{len} eta {eta}")
                .expect("template"),
        );
        b
    });
    let results = replay_profile(&session, &profile, &timing, |i, n, what| {
        if let Some(b) = &bar {
            b.set_length(n as u64);
            b.set_position(i as u64);
            b.set_message(what.to_string());
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let replay = Replay {
        schema: SCHEMA.into(),
        source: args.log.display().to_string(),
        onednn: session.dnnl.version.clone(),
        library: session.dnnl.api.path.display().to_string(),
        cpu: profilednn_machine::cpu::model_name(),
        threads: std::env::var("OMP_NUM_THREADS").ok(),
        binding: std::env::var("OMP_PROC_BIND").ok(),
        results,
    };
    std::fs::write(&args.output, serde_json::to_string_pretty(&replay)? + "\n")
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    let done: Vec<_> = replay
        .results
        .iter()
        .filter(|r| r.measurement.is_some())
        .collect();
    let skipped: Vec<_> = replay
        .results
        .iter()
        .filter(|r| r.skipped.is_some())
        .collect();
    let mismatched = done
        .iter()
        .filter(|r| r.implementation_matches == Some(false))
        .count();
    let replayed_time: f64 = done.iter().map(|r| r.log_time_ms).sum();
    let total: f64 = replay.results.iter().map(|r| r.log_time_ms).sum();
    outln!(
        "Replayed {} of {} problems with oneDNN {} ({}): {:.1}% of the log's oneDNN time",
        done.len(),
        replay.results.len(),
        replay.onednn,
        replay.library,
        if total > 0.0 {
            replayed_time / total * 100.0
        } else {
            0.0
        }
    );
    outln!(
        "  {} picked another implementation than the log (listed in {})",
        mismatched,
        args.output.display()
    );
    outln!(
        "\n{:>10} {:>10} {:>7}  problem",
        "log ms",
        "here ms",
        "ratio"
    );
    for r in done.iter().take(12) {
        let m = r.measurement.as_ref().unwrap();
        let per_call = r.log_time_ms / r.calls.max(1) as f64;
        outln!(
            "{per_call:>10.3} {:>10.3} {:>6.2}x  {} {} {}{}",
            m.median_ms,
            per_call / m.median_ms.max(1e-9),
            r.prim_kind,
            r.prop_kind,
            r.shapes,
            if r.implementation_matches == Some(false) {
                format!(
                    "  [here {} vs log {}]",
                    m.implementation,
                    r.log_implementations.join(",")
                )
            } else {
                String::new()
            }
        );
    }
    if !skipped.is_empty() {
        let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
        for r in &skipped {
            *reasons.entry(r.skipped.as_deref().unwrap()).or_default() += 1;
        }
        outln!("\nNot replayed ({}):", skipped.len());
        for (why, n) in reasons {
            outln!("  {n:>4} × {why}");
        }
    }
    eprintln!(
        "profilednn: replay results written to {}",
        args.output.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Size of the last-level cache from sysfs (32 MiB when unknown).
fn llc_bytes() -> usize {
    let mut best = 0usize;
    for i in 0..8 {
        let p = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
        if let Ok(s) = std::fs::read_to_string(p) {
            let s = s.trim();
            let (num, mul) = match s.strip_suffix('K') {
                Some(n) => (n, 1024),
                None => match s.strip_suffix('M') {
                    Some(n) => (n, 1 << 20),
                    None => (s, 1),
                },
            };
            if let Ok(v) = num.parse::<usize>() {
                best = best.max(v * mul);
            }
        }
    }
    if best == 0 {
        32 << 20
    } else {
        best
    }
}
