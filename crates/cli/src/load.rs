//! Reading logs into profiles (`profilednn_analysis::load`) with a progress bar on terminals,
//! the value parsers of the commands' flags, and the one-line error text.

use anyhow::{bail, Result};
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_analysis::load::{self, LoadOptions, ScanProgress};
use profilednn_analysis::Profile;
use profilednn_verbose::LogInput;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub use profilednn_analysis::load::{no_verbose_message, Loaded};

/// The profile of one process's log (`profilednn_analysis::load::profile`), with a progress
/// bar on terminals.
pub fn profile(
    log: &std::path::Path,
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
) -> Result<Profile> {
    profile_with(log, threads, iterations, no_progress, false)
}

/// [`profile`]; with `empty_ok`, a log without a oneDNN line is a profile of nothing (its
/// PyTorch trace holds the step) rather than an error.
pub fn profile_with(
    log: &std::path::Path,
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
    empty_ok: bool,
) -> Result<Profile> {
    let bar = Bar { no_progress };
    Ok(load::profile(
        log,
        &options(threads, iterations, empty_ok, &bar),
    )?)
}

/// The profiles and ranks of `logs` (`profilednn_analysis::load::logs_and_ranks`), with a
/// progress bar on terminals; with `empty_ok`, a log without a oneDNN line is a profile of
/// nothing rather than an error.
pub fn logs_and_ranks_with(
    logs: &[PathBuf],
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
    empty_ok: bool,
) -> Result<Loaded> {
    let bar = Bar { no_progress };
    let o = options(threads, iterations, empty_ok, &bar);
    Ok(load::logs_and_ranks(logs, &o)?)
}

fn options(
    threads: Option<usize>,
    iterations: Option<u64>,
    empty_ok: bool,
    progress: &dyn ScanProgress,
) -> LoadOptions<'_> {
    LoadOptions {
        threads,
        iterations,
        empty_ok,
        progress,
    }
}

/// A scan's progress on a terminal: a bar of the bytes read, updated every 100 ms.
struct Bar {
    no_progress: bool,
}

impl ScanProgress for Bar {
    fn start(&self, input: &LogInput, read: Arc<AtomicU64>) -> Option<Box<dyn FnOnce()>> {
        let bar = progress_bar(input, self.no_progress)?;
        let done = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (b, d) = (bar.clone(), done.clone());
            std::thread::spawn(move || {
                while !d.load(Ordering::Relaxed) {
                    b.set_position(read.load(Ordering::Relaxed));
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        Some(Box::new(move || {
            done.store(true, Ordering::Relaxed);
            let _ = ticker.join();
            bar.finish_and_clear();
        }))
    }
}

fn progress_bar(input: &LogInput, disabled: bool) -> Option<ProgressBar> {
    if disabled || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match input {
        LogInput::Mapped { map, .. } if map.len() > (32 << 20) => {
            let b = ProgressBar::new(map.len() as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .expect("template")
                .progress_chars("=> "),
            );
            b
        }
        LogInput::Stream { .. } => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg} {bytes} read, {bytes_per_sec}")
                    .expect("template"),
            );
            b
        }
        _ => return None,
    };
    bar.set_message(input.path().display().to_string());
    Some(bar)
}

/// An error and its causes on one line, `outer: inner: …`, each cause left out when the text
/// before it already says it (errors that print their source themselves).
pub fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let c = cause.to_string();
        if out.contains(&c) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&c);
    }
    out
}

/// Value parser of counts (`--iterations`, `--top`, `--cores`): a whole number of at least 1.
pub fn count(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a whole number")),
    }
}

/// [`count`] as a `usize`.
pub fn count_usize(s: &str) -> Result<usize, String> {
    count(s).and_then(|n| usize::try_from(n).map_err(|_| format!("{n} is too large")))
}

/// Value parser of shares: a fraction from 0 to 1 (0.05 = 5 %).
pub fn share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!(
            "a share is a fraction from 0 to 1 (0.05 = 5 %), not {v}"
        )),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

/// Value parser of non-negative finite numbers (ratios, durations, counts of ops).
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("must be a number of at least 0, not {v}")),
        Err(_) => Err(format!("`{s}` is not a number")),
    }
}

/// Value parser of `B,A`: two counts (`diff --iterations 3,5`).
pub fn count_pair(s: &str) -> Result<(u64, u64), String> {
    let Some((b, a)) = s.split_once(',') else {
        return Err(format!(
            "expected BEFORE,AFTER (two counts, as in 3,5), not `{s}`"
        ));
    };
    let part = |x: &str, which: &str| count(x).map_err(|e| format!("{which}: {e}"));
    Ok((part(b, "BEFORE")?, part(a, "AFTER")?))
}

/// How the ranks were launched, as `record --ranks` wrote it beside a log (`STEM.launch.json`):
/// `advise` and `report`'s advice read it alike; a file there that is not one is an error.
pub fn launch_of(logs: &[PathBuf]) -> Result<Option<profilednn_analysis::ranks::launch::Launch>> {
    logs.iter()
        .find_map(|l| profilednn_analysis::ranks::launch::read(l).transpose())
        .transpose()
        .map_err(anyhow::Error::msg)
}

/// `--torch-trace` of `report` and `advise`: the trace joined with the one log it was recorded
/// with ([`torch_join`]), `None` without a trace.
pub fn torch_join_of_logs(
    trace: Option<&std::path::Path>,
    logs: &[PathBuf],
) -> Result<Option<profilednn_torchtrace::TorchJoin>> {
    let Some(trace) = trace else {
        return Ok(None);
    };
    let [log] = logs else {
        bail!("--torch-trace needs exactly one log (the one recorded with the trace)");
    };
    torch_join(trace, log).map(Some)
}

/// Joins a PyTorch profiler trace with its log (`profilednn_analysis::torch_join::of_files`):
/// a trace of another run is refused; what makes the join doubtful (no timestamps, part of the
/// iterations) is printed to stderr, naming both files.
pub fn torch_join(
    trace: &std::path::Path,
    log: &std::path::Path,
) -> anyhow::Result<profilednn_torchtrace::TorchJoin> {
    torch_join_with(trace, log, false)
}

/// [`torch_join`] with the first iteration left out as warm-up (`project --to`).
pub fn torch_join_steady(
    trace: &std::path::Path,
    log: &std::path::Path,
) -> anyhow::Result<profilednn_torchtrace::TorchJoin> {
    torch_join_with(trace, log, true)
}

fn torch_join_with(
    trace: &std::path::Path,
    log: &std::path::Path,
    steady: bool,
) -> anyhow::Result<profilednn_torchtrace::TorchJoin> {
    let j = profilednn_analysis::torch_join::of_files(trace, log, steady)?;
    for w in &j.warnings {
        eprintln!(
            "profilednn: WARNING: {} with {}: {w}",
            trace.display(),
            log.display()
        );
    }
    Ok(j)
}
