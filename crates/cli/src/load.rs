//! Reading logs into profiles, with a progress bar on terminals: shared by every command.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_analysis::profile::{Parsed, ProfileOptions};
use profilednn_analysis::ranks::{RankSet, RankView};
use profilednn_analysis::{scan, Profile, ScanOptions};
use profilednn_verbose::LogInput;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The profile of one process's log, for the commands that compare or replay one run
/// (`diff`, `project`, `replay`, `benchdnn`): a multi-rank log is an error that says how to
/// pick a rank, rather than silently one of its ranks or their sum.
pub fn profile(
    log: &std::path::Path,
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
) -> Result<Profile> {
    // Refused from its first MiB, before a labelled log of many GB is read through.
    if let Some(e) = crate::rank_logs::multi_rank_error(log)? {
        return Err(e);
    }
    let mut loaded = logs_and_ranks(&[log.to_path_buf()], threads, iterations, no_progress)?;
    if let Some(set) = loaded.ranks.first() {
        let ranks: Vec<u32> = set.ranks.iter().map(|r| r.rank).collect();
        return Err(crate::rank_logs::one_process_only(
            &set.source,
            &set.launcher,
            &ranks,
        ));
    }
    Ok(loaded.profiles.remove(0))
}

/// What the logs hold: a profile per single-process log and per rank of a multi-rank log (a
/// log whose lines carry a launcher's rank label, or a torchrun `--log-dir` tree), in order,
/// and the ranks of each multi-rank log compared.
pub struct Loaded {
    pub profiles: Vec<Profile>,
    pub ranks: Vec<RankSet>,
}

impl Loaded {
    /// Adds the ranks of one multi-rank log: their profiles (then the profile of its lines
    /// without a rank label, when some are verbose lines) and their comparison.
    fn push_ranks(
        &mut self,
        source: String,
        launcher: String,
        ranks: Vec<(Profile, RankView)>,
        unlabelled_lines: u64,
        unlabelled: Option<Profile>,
    ) {
        let first = self.profiles.len();
        let mut views = Vec::with_capacity(ranks.len());
        for (p, v) in ranks {
            self.profiles.push(p);
            views.push(v);
        }
        let set = RankSet::new(
            source,
            launcher,
            views.into_iter().zip(&self.profiles[first..]).collect(),
            unlabelled_lines,
        );
        self.profiles.extend(unlabelled);
        self.ranks.push(set);
    }
}

/// A log's node and the global rank of its first rank (`record --ranks`'s node line).
type NodeLine = (String, u32);

/// Each rank log's node, as (its source, node), for the ranks whose node is known: what
/// `advise` needs to tell a slow node from a slow rank.
pub fn nodes_of(sets: &[RankSet]) -> Vec<(String, String)> {
    sets.iter()
        .flat_map(|s| &s.ranks)
        .filter_map(|r| Some((r.source.clone(), r.node.clone()?)))
        .collect()
}

/// One rank's profile and figures, from its tally. `read_error`: the log it came from could
/// not be read to its end (as `Profile::from_scan` does for a log cut short, its last
/// iteration is partial).
fn rank_of(
    name: String,
    rank: u32,
    tally: profilednn_analysis::Tally,
    read_error: Option<&str>,
    iterations: Option<u64>,
    parsed: &mut Parsed,
) -> (Profile, RankView) {
    let per_iteration = profilednn_analysis::ranks::iteration_times_of_tally(&tally);
    let scanned = profilednn_analysis::ScanOutput {
        tally,
        read_error: None,
    };
    let mut p = Profile::from_scan_cached(name, scanned, &ProfileOptions { iterations }, parsed);
    if let Some(e) = read_error {
        p.read_error = Some(e.to_string());
        p.iterations = p
            .iterations
            .take()
            .and_then(profilednn_analysis::Iterations::without_cut_last);
    }
    let view = RankView::new(rank, &p, per_iteration);
    (p, view)
}

pub fn logs_and_ranks(
    logs: &[PathBuf],
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
) -> Result<Loaded> {
    logs_and_ranks_with(logs, threads, iterations, no_progress, false)
}

/// [`logs_and_ranks`]; with `empty_ok`, a log without a oneDNN line is a profile of nothing
/// rather than an error (a PyTorch trace given beside it holds the step: f32 transformers and
/// compiled models call no oneDNN).
pub fn logs_and_ranks_with(
    logs: &[PathBuf],
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
    empty_ok: bool,
) -> Result<Loaded> {
    if logs.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        bail!("stdin (-) can be given only once");
    }
    let threads = threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let mut out = Loaded {
        profiles: Vec::new(),
        ranks: Vec::new(),
    };
    // The logs of several nodes (each with its node line) are one run.
    let mut groups: Vec<(Option<NodeLine>, Vec<PathBuf>)> = log_groups(logs)?
        .into_iter()
        .map(|g| match &g[..] {
            [p] => Ok((crate::rank_logs::node_of(p)?, g)),
            _ => Ok((None, g)),
        })
        .collect::<Result<_>>()?;
    if groups.iter().filter(|g| g.0.is_some()).count() > 1 {
        let parts = groups
            .iter()
            .filter_map(|(n, g)| Some((g[0].clone(), n.clone()?)))
            .collect();
        push_node_logs(&mut out, parts, threads, iterations, no_progress)?;
        groups.retain(|g| g.0.is_none());
    }
    for (_, group) in groups {
        let [path] = &group[..] else {
            // The files of one rotated set (oneDNN's file logger), oldest first: one log.
            let name = format!(
                "{} (rotated set of {} files, {} … {})",
                group[group.len() - 1].display(),
                group.len(),
                group[0].display(),
                group[group.len() - 1].display()
            );
            let input = LogInput::rotated(&group[group.len() - 1], group.clone());
            let profile = scan_profile(name, input, threads, iterations, no_progress)?;
            if let Some(msg) = no_verbose_lines(&profile).filter(|_| !empty_ok) {
                bail!(msg);
            }
            out.profiles.push(profile);
            continue;
        };
        let input = match crate::rank_logs::split_or_open(path)? {
            crate::rank_logs::Source::Single(input) => input,
            crate::rank_logs::Source::Labelled {
                source,
                launcher,
                input,
            } => {
                let split = scan_labelled(input, launcher, threads, no_progress);
                let read_error = split.read_error.map(|e| e.to_string());
                let mut ranks = Vec::new();
                let mut parsed = Parsed::default();
                for r in split.ranks {
                    let name = format!("{source} [rank {}]", r.rank);
                    let e = read_error.as_deref();
                    ranks.push(rank_of(name, r.rank, r.tally, e, iterations, &mut parsed));
                }
                let unlabelled = (split.unlabelled_profile_lines > 0).then(|| {
                    let name = format!("{source} [no rank label]");
                    let e = read_error.as_deref();
                    rank_of(name, 0, split.unlabelled, e, iterations, &mut parsed).0
                });
                out.push_ranks(
                    source,
                    launcher.as_str().to_string(),
                    ranks,
                    split.unlabelled_profile_lines,
                    unlabelled,
                );
                continue;
            }
            crate::rank_logs::Source::Files(files) => {
                let mut ranks = Vec::new();
                let mut parsed = Parsed::default();
                for (i, (rank, file)) in files.files.into_iter().enumerate() {
                    let input = LogInput::open(&file).context("cannot read the log")?;
                    let node = files.nodes.get(i);
                    let name = match node {
                        Some(n) => format!("{} [rank {rank}, node {n}]", files.source),
                        None => format!("{} [rank {rank}]", files.source),
                    };
                    let scanned = scan_tally(input, threads, true);
                    if let Some(e) = scanned.read_error {
                        bail!("{}: cannot read the log: {e}", file.display());
                    }
                    let tally = scanned.tally;
                    let mut r = rank_of(name, rank, tally, None, iterations, &mut parsed);
                    r.1.node = node.cloned();
                    ranks.push(r);
                }
                out.push_ranks(files.source, files.launcher, ranks, 0, None);
                continue;
            }
        };
        let name = if path.as_os_str() == "-" {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        let profile = scan_profile(name, input, threads, iterations, no_progress)?;
        if let Some(msg) = no_verbose_lines(&profile).filter(|_| !empty_ok) {
            bail!(msg);
        }
        out.profiles.push(profile);
    }
    Ok(out)
}

/// The logs of several nodes, each starting with its node line (`record --ranks`), read as one
/// run: a labelled log's rank `k` is global rank R + k (R from its node line), a log without
/// labels is rank R; every rank knows its node.
fn push_node_logs(
    out: &mut Loaded,
    parts: Vec<(PathBuf, NodeLine)>,
    threads: usize,
    iterations: Option<u64>,
    no_progress: bool,
) -> Result<()> {
    let mut ranks: Vec<(Profile, RankView)> = Vec::new();
    let mut parsed = Parsed::default();
    let mut unlabelled_lines = 0;
    let mut owner: std::collections::BTreeMap<u32, PathBuf> = Default::default();
    for (path, (node, first)) in &parts {
        let mut found: Vec<(u32, profilednn_analysis::Tally, Option<String>)> = Vec::new();
        match crate::rank_logs::split_or_open(path)? {
            crate::rank_logs::Source::Labelled {
                launcher, input, ..
            } => {
                let split = scan_labelled(input, launcher, threads, no_progress);
                let e = split.read_error.map(|e| e.to_string());
                unlabelled_lines += split.unlabelled_profile_lines;
                for r in split.ranks {
                    found.push((first.saturating_add(r.rank), r.tally, e.clone()));
                }
            }
            crate::rank_logs::Source::Single(input) => {
                let s = scan_tally(input, threads, no_progress);
                found.push((*first, s.tally, s.read_error.map(|e| e.to_string())));
            }
            crate::rank_logs::Source::Files(_) => bail!("{}: not a log file", path.display()),
        }
        for (rank, tally, e) in found {
            if let Some(other) = owner.insert(rank, path.clone()) {
                bail!(
                    "{} and {}: both hold rank {rank} (by their node lines, `profilednn,node,…`): \
                     logs of two runs, or of one node twice?",
                    other.display(),
                    path.display()
                );
            }
            let name = format!("{} [rank {rank}, node {node}]", path.display());
            let mut r = rank_of(name, rank, tally, e.as_deref(), iterations, &mut parsed);
            r.1.node = Some(node.clone());
            ranks.push(r);
        }
    }
    let nodes: std::collections::BTreeSet<&String> = parts.iter().map(|p| &p.1 .0).collect();
    let source = parts
        .iter()
        .map(|p| p.0.display().to_string())
        .collect::<Vec<_>>()
        .join(" + ");
    out.push_ranks(
        source,
        format!("record --ranks, a log per node ({} nodes)", nodes.len()),
        ranks,
        unlabelled_lines,
        None,
    );
    Ok(())
}

/// The logs that `paths` name, each a group of files read as one log:
/// - the files of a rotated set given together (`train.log train.1.log …`) are one group,
///   oldest first ([`profilednn_verbose::rotated`]);
/// - a directory without subdirectories that is not one rotated set is each of its files (a
///   folder of logs); a directory of one rotated set, and a torchrun `--log-dir` tree, stay one
///   path, which opening reads as a whole.
fn log_groups(paths: &[PathBuf]) -> Result<Vec<Vec<PathBuf>>> {
    use profilednn_verbose::rotated;
    let mut flat = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" || !p.is_dir() {
            flat.push(p.clone());
            continue;
        }
        let has_subdirs = std::fs::read_dir(p)
            .with_context(|| format!("{}: cannot list the directory", p.display()))?
            .flatten()
            .any(|e| e.path().is_dir());
        if has_subdirs || rotated::set_in_dir(p).ok().flatten().is_some() {
            flat.push(p.clone());
            continue;
        }
        let files = rotated::files_in(p)
            .with_context(|| format!("{}: cannot list the directory", p.display()))?;
        if files.is_empty() {
            flat.push(p.clone()); // opening it says what it is
            continue;
        }
        flat.extend(files);
    }
    Ok(rotated::group(&flat))
}

/// Scans one log into a profile (with a progress bar on terminals).
fn scan_profile(
    name: String,
    input: LogInput,
    threads: usize,
    iterations: Option<u64>,
    no_progress: bool,
) -> Result<Profile> {
    let out = scan_tally(input, threads, no_progress);
    Ok(Profile::from_scan(
        name,
        out,
        &ProfileOptions { iterations },
    ))
}

/// Scans one log into a tally (with a progress bar on terminals).
fn scan_tally(
    input: LogInput,
    threads: usize,
    no_progress: bool,
) -> profilednn_analysis::ScanOutput {
    scanning(input, threads, no_progress, scan)
}

/// Scans a labelled multi-rank log into a tally per rank, split while it streams (with a
/// progress bar on terminals).
fn scan_labelled(
    input: LogInput,
    launcher: profilednn_verbose::launcher::Launcher,
    threads: usize,
    no_progress: bool,
) -> profilednn_analysis::rank_scan::RankScanOutput {
    scanning(input, threads, no_progress, |input, opts| {
        profilednn_analysis::rank_scan::scan_ranks(input, launcher, opts)
    })
}

/// Runs `work` on `input` with scan options whose byte counter a progress bar shows as it
/// grows (on terminals, unless `no_progress`).
fn scanning<T>(
    input: LogInput,
    threads: usize,
    no_progress: bool,
    work: impl FnOnce(LogInput, &ScanOptions) -> T,
) -> T {
    let bar = progress_bar(&input, no_progress);
    let progress = Arc::new(AtomicU64::new(0));
    let opts = ScanOptions {
        threads,
        progress: Some(progress.clone()),
        ..Default::default()
    };
    let out = std::thread::scope(|s| {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ticker = bar.clone().map(|b| {
            let (p, d) = (progress.clone(), done.clone());
            s.spawn(move || {
                while !d.load(Ordering::Relaxed) {
                    b.set_position(p.load(Ordering::Relaxed));
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        });
        let out = work(input, &opts);
        done.store(true, Ordering::Relaxed);
        if let Some(t) = ticker {
            let _ = t.join();
        }
        out
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    out
}

/// The error of a log without a single oneDNN verbose line (an empty file, the program's output
/// without verbose mode, binary data), with how to get one; `None` when the log has any.
pub fn no_verbose_lines(p: &Profile) -> Option<String> {
    let l = &p.lines;
    if l.exec + l.create + l.info + l.diagnostics + l.malformed > 0 {
        return None;
    }
    // Iteration markers but no primitive: the training ran, but nothing called oneDNN, as on
    // PyTorch in f32 when no convolution runs. Recording verbose mode again would not help.
    if l.skipped.get("marker").is_some_and(|&n| n > 0) {
        return Some(format!(
            "{}: no oneDNN verbose line found ({} lines read). {NOTHING_CALLED_ONEDNN}",
            p.sources.join(", "),
            l.total
        ));
    }
    Some(no_verbose_message(
        &p.sources.join(", "),
        l.total,
        p.read_error.as_deref(),
    ))
}

/// Why a log of a training run can hold markers and no primitive, and what to record instead.
pub const NOTHING_CALLED_ONEDNN: &str = "The log has iteration markers, so the training ran, \
     but nothing in it called oneDNN: on PyTorch, f32 nn.Linear runs in the BLAS (MKL), attention \
     and element-wise ops in ATen, and only convolutions (and bf16 autocast's Linear and matmul) \
     reach oneDNN. Record the framework's own ops with `profilednn record --torch -o train.log -- \
     python train.py` (its PyTorch trace is costed op by op: `profilednn report train.log \
     --torch-trace train.trace.json.gz`)";

/// "No oneDNN verbose line in `source`", and how to record a log (exit status 1 follows).
pub fn no_verbose_message(source: &str, lines: u64, read_error: Option<&str>) -> String {
    let read = match read_error {
        Some(e) => format!("; reading stopped early: {e}"),
        None => String::new(),
    };
    format!(
        "{source}: no oneDNN verbose line found ({lines} line{} read{read}). Record a log with \
         `profilednn record -o train.log -- python train.py`, or run the program with \
         ONEDNN_VERBOSE=1 (DNNL_VERBOSE=1 for older versions) and save its output",
        if lines == 1 { "" } else { "s" }
    )
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

/// `--torch-trace` of `report` and `advise`: the trace joined with the one log it was recorded
/// with ([`torch_join`]), `None` without a trace.
pub fn torch_join_of_logs(
    trace: Option<&std::path::Path>,
    logs: &[PathBuf],
) -> Result<Option<profilednn_analysis::torch_trace::TorchJoin>> {
    let Some(trace) = trace else {
        return Ok(None);
    };
    let [log] = logs else {
        bail!("--torch-trace needs exactly one log (the one recorded with the trace)");
    };
    torch_join(trace, log).map(Some)
}

/// Joins a PyTorch profiler trace with its log; what makes the join doubtful (another run, no
/// timestamps, part of the iterations) is printed to stderr, naming both files.
pub fn torch_join(
    trace: &std::path::Path,
    log: &std::path::Path,
) -> anyhow::Result<profilednn_analysis::torch_trace::TorchJoin> {
    let tr = profilednn_analysis::torch_trace::read_trace(trace)?;
    let input = profilednn_verbose::LogInput::open(log).context("cannot read the log")?;
    let j = profilednn_analysis::torch_trace::join(&tr, input);
    for w in &j.warnings {
        eprintln!(
            "profilednn: WARNING: {} with {}: {w}",
            trace.display(),
            log.display()
        );
    }
    Ok(j)
}
