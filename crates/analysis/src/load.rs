//! Reading logs into profiles: each path a log, a rotated set of files, a folder of logs, a
//! labelled multi-rank log (split while it streams) or a torchrun `--log-dir` tree — the one
//! reading every command shares. How the scan's progress is shown is the caller's
//! ([`ScanProgress`]): a terminal's bar is no concern of the library.

use crate::profile::{Parsed, ProfileOptions};
use crate::ranks::logs::{self as rank_logs, RankLogError};
use crate::ranks::{RankSet, RankView};
use crate::{scan, Profile, ScanOptions};
use profilednn_verbose::{LogInput, OpenError};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Shows a scan's progress: told when the scan of `input` starts, with the counter of the bytes
/// read so far; returns what to call when the scan ends (`None`: nothing shown).
pub trait ScanProgress {
    fn start(&self, input: &LogInput, read: Arc<AtomicU64>) -> Option<Box<dyn FnOnce()>>;
}

/// No progress shown.
pub struct Unwatched;

impl ScanProgress for Unwatched {
    fn start(&self, _: &LogInput, _: Arc<AtomicU64>) -> Option<Box<dyn FnOnce()>> {
        None
    }
}

/// How to read the logs.
pub struct LoadOptions<'a> {
    /// Scanning threads (default: every core).
    pub threads: Option<usize>,
    /// The iteration count, when the log does not say.
    pub iterations: Option<u64>,
    /// A log without a oneDNN line is a profile of nothing rather than an error (a PyTorch
    /// trace given beside it holds the step: f32 transformers and compiled models call no
    /// oneDNN).
    pub empty_ok: bool,
    pub progress: &'a dyn ScanProgress,
}

/// Why logs could not be read into profiles.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("stdin (-) can be given only once")]
    StdinTwice,
    /// No oneDNN verbose line ([`no_verbose_lines`] says why and how to record one).
    #[error("{0}")]
    NoVerboseLines(String),
    #[error("cannot read the log")]
    Open(#[source] OpenError),
    #[error("{}: cannot read the log: {error}", path.display())]
    Read { path: PathBuf, error: String },
    #[error("{}: cannot list the directory", dir.display())]
    List {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(transparent)]
    Ranks(#[from] RankLogError),
    /// A file of another kind given as the log (a PyTorch trace, a machine profile, a replay
    /// file): the message names it and where it goes.
    #[error("{0}")]
    WrongFile(String),
    #[error(
        "{} and {}: both hold rank {rank} (by their node lines, `profilednn,node,…`): logs of two \
         runs, or of one node twice?",
        first.display(),
        second.display()
    )]
    RankTwice {
        rank: u32,
        first: PathBuf,
        second: PathBuf,
    },
}

type Result<T> = std::result::Result<T, LoadError>;

/// The profile of one process's log, for the commands that compare or replay one run
/// (`diff`, `project`, `replay`, `benchdnn`): a multi-rank log is an error that says how to
/// pick a rank, rather than silently one of its ranks or their sum.
pub fn profile(log: &std::path::Path, o: &LoadOptions) -> Result<Profile> {
    // Refused from its first MiB, before a labelled log of many GB is read through.
    if let Some(e) = rank_logs::multi_rank_error(log)? {
        return Err(e.into());
    }
    let mut loaded = logs_and_ranks(&[log.to_path_buf()], o)?;
    if let Some(set) = loaded.ranks.first() {
        let ranks: Vec<u32> = set.ranks.iter().map(|r| r.rank).collect();
        return Err(rank_logs::one_process_only(&set.source, &set.launcher, &ranks).into());
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
    tally: crate::Tally,
    read_error: Option<&str>,
    iterations: Option<u64>,
    parsed: &mut Parsed,
) -> (Profile, RankView) {
    let per_iteration = crate::ranks::iteration_times_of_tally(&tally);
    let scanned = crate::ScanOutput {
        tally,
        read_error: None,
    };
    let mut p = Profile::from_scan_cached(name, scanned, &ProfileOptions { iterations }, parsed);
    if let Some(e) = read_error {
        p.read_error = Some(e.to_string());
        p.iterations = p
            .iterations
            .take()
            .and_then(crate::Iterations::without_cut_last);
    }
    let view = RankView::new(rank, &p, per_iteration);
    (p, view)
}

/// Why the file at `p` is not a log, when its first bytes show another kind of ProfileDNN
/// input (an empty file or an unknown one is left to the scan's own message).
fn wrong_file(p: &std::path::Path) -> Option<String> {
    use profilednn_verbose::FileKind;
    let kind = FileKind::of_file(p).ok()?;
    if kind == FileKind::Empty {
        return None;
    }
    kind.refusal(p, FileKind::OnednnLog)
}

/// The profiles (and rank sets) of `logs`, in order.
pub fn logs_and_ranks(logs: &[PathBuf], o: &LoadOptions) -> Result<Loaded> {
    if logs.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        return Err(LoadError::StdinTwice);
    }
    // A PyTorch trace given as the log is refused from its first bytes, not after reading
    // its million lines for no oneDNN line.
    for p in logs.iter().filter(|p| p.is_file()) {
        if let Some(m) = wrong_file(p) {
            return Err(LoadError::WrongFile(m));
        }
    }
    let (iterations, empty_ok, progress) = (o.iterations, o.empty_ok, o.progress);
    let threads = o.threads.unwrap_or_else(|| {
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
            [p] => Ok((rank_logs::node_of(p)?, g)),
            _ => Ok((None, g)),
        })
        .collect::<Result<_>>()?;
    if groups.iter().filter(|g| g.0.is_some()).count() > 1 {
        let parts = groups
            .iter()
            .filter_map(|(n, g)| Some((g[0].clone(), n.clone()?)))
            .collect();
        push_node_logs(&mut out, parts, threads, iterations, progress)?;
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
            let profile = scan_profile(name, input, threads, iterations, progress);
            if let Some(msg) = no_verbose_lines(&profile).filter(|_| !empty_ok) {
                return Err(LoadError::NoVerboseLines(msg));
            }
            out.profiles.push(profile);
            continue;
        };
        let input = match rank_logs::split_or_open(path)? {
            rank_logs::Source::Single(input) => input,
            rank_logs::Source::Labelled {
                source,
                launcher,
                input,
            } => {
                let split = scan_labelled(input, launcher, threads, progress);
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
            rank_logs::Source::Files(files) => {
                let mut ranks = Vec::new();
                let mut parsed = Parsed::default();
                for (i, (rank, file)) in files.files.into_iter().enumerate() {
                    let input = LogInput::open(&file).map_err(LoadError::Open)?;
                    let node = files.nodes.get(i);
                    let name = match node {
                        Some(n) => format!("{} [rank {rank}, node {n}]", files.source),
                        None => format!("{} [rank {rank}]", files.source),
                    };
                    let scanned = scan_tally(input, threads, &Unwatched);
                    if let Some(e) = scanned.read_error {
                        return Err(LoadError::Read {
                            path: file,
                            error: e.to_string(),
                        });
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
        let profile = scan_profile(name, input, threads, iterations, progress);
        if let Some(msg) = no_verbose_lines(&profile).filter(|_| !empty_ok) {
            return Err(LoadError::NoVerboseLines(msg));
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
    progress: &dyn ScanProgress,
) -> Result<()> {
    let mut ranks: Vec<(Profile, RankView)> = Vec::new();
    let mut parsed = Parsed::default();
    let mut unlabelled_lines = 0;
    let mut owner: std::collections::BTreeMap<u32, PathBuf> = Default::default();
    for (path, (node, first)) in &parts {
        let mut found: Vec<(u32, crate::Tally, Option<String>)> = Vec::new();
        match rank_logs::split_or_open(path)? {
            rank_logs::Source::Labelled {
                launcher, input, ..
            } => {
                let split = scan_labelled(input, launcher, threads, progress);
                let e = split.read_error.map(|e| e.to_string());
                unlabelled_lines += split.unlabelled_profile_lines;
                for r in split.ranks {
                    found.push((first.saturating_add(r.rank), r.tally, e.clone()));
                }
            }
            rank_logs::Source::Single(input) => {
                let s = scan_tally(input, threads, progress);
                found.push((*first, s.tally, s.read_error.map(|e| e.to_string())));
            }
            rank_logs::Source::Files(_) => {
                return Err(LoadError::Read {
                    path: path.clone(),
                    error: "not a log file (a directory)".into(),
                })
            }
        }
        for (rank, tally, e) in found {
            if let Some(other) = owner.insert(rank, path.clone()) {
                return Err(LoadError::RankTwice {
                    rank,
                    first: other,
                    second: path.clone(),
                });
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
            .map_err(|error| LoadError::List {
                dir: p.clone(),
                error,
            })?
            .flatten()
            .any(|e| e.path().is_dir());
        if has_subdirs || rotated::set_in_dir(p).ok().flatten().is_some() {
            flat.push(p.clone());
            continue;
        }
        let files = rotated::files_in(p).map_err(|error| LoadError::List {
            dir: p.clone(),
            error,
        })?;
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
    progress: &dyn ScanProgress,
) -> Profile {
    let out = scan_tally(input, threads, progress);
    Profile::from_scan(name, out, &ProfileOptions { iterations })
}

/// Scans one log into a tally (with a progress bar on terminals).
fn scan_tally(input: LogInput, threads: usize, progress: &dyn ScanProgress) -> crate::ScanOutput {
    scanning(input, threads, progress, scan)
}

/// Scans a labelled multi-rank log into a tally per rank, split while it streams (with a
/// progress bar on terminals).
fn scan_labelled(
    input: LogInput,
    launcher: profilednn_verbose::launcher::Launcher,
    threads: usize,
    progress: &dyn ScanProgress,
) -> crate::ranks::scan::RankScanOutput {
    scanning(input, threads, progress, |input, opts| {
        crate::ranks::scan::scan_ranks(input, launcher, opts)
    })
}

/// Runs `work` on `input` with scan options whose byte counter `progress` is shown.
fn scanning<T>(
    input: LogInput,
    threads: usize,
    progress: &dyn ScanProgress,
    work: impl FnOnce(LogInput, &ScanOptions) -> T,
) -> T {
    let read = Arc::new(AtomicU64::new(0));
    let opts = ScanOptions {
        threads,
        progress: Some(read.clone()),
        ..Default::default()
    };
    let done = progress.start(&input, read);
    let out = work(input, &opts);
    if let Some(done) = done {
        done();
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
