//! The ranks of a multi-rank run, from either form it can take on disk: one log whose lines
//! carry a launcher's rank label (what `profilednn record` writes for torchrun `--tee`, mpirun
//! `--tag-output`, …), or torchrun's `--log-dir` tree of one `stdout.log` per local rank.

use profilednn_verbose::demux::{demux, sniff};
use profilednn_verbose::{LogInput, OpenError};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why the ranks of a log could not be read, or why a command refuses them.
#[derive(Debug, thiserror::Error)]
pub enum RankLogError {
    #[error("cannot read the log")]
    Open(#[source] OpenError),
    #[error("stdin did not open as a stream")]
    StdinNotStream,
    #[error("<stdin>: cannot read the log")]
    Stdin(#[source] std::io::Error),
    #[error("{}: cannot read the log: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: cannot list", dir.display())]
    List {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "{}: holds the logs of {} torchrun runs ({}); name one run's directory",
        dir.display(),
        runs.len(),
        runs.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    Runs { dir: PathBuf, runs: Vec<PathBuf> },
    /// A command that takes one process's log (`diff`, `project`, `replay`, `trace`, …) given
    /// a multi-rank one: which ranks it holds, and how to keep one.
    #[error(
        "{log}: a multi-rank log ({} ranks: {}, labelled by {launcher}); this command takes \
         one process's log. `profilednn report {log}` shows every rank; to keep one, filter \
         its labelled lines and remove the label (rank 1 of torchrun: `sed -n \
         's/^\\[default1\\]://p' LOG > rank1.log`)",
        ranks.len(),
        ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
    )]
    MultiRank {
        log: String,
        launcher: String,
        ranks: Vec<u32>,
    },
}

type Result<T> = std::result::Result<T, RankLogError>;

/// One rank's lines, labels removed.
pub struct RankLines {
    pub rank: u32,
    pub bytes: Vec<u8>,
}

/// A multi-rank log split by rank.
pub struct RankLogs {
    pub source: String,
    pub launcher: String,
    pub ranks: Vec<RankLines>,
}

/// How much of a log is read to decide whether its lines carry rank labels.
const SNIFF_BYTES: u64 = 1 << 20;

/// The ranks of `path`, or `None` for an ordinary single-process log (and for stdin, which is
/// read once, as it comes).
pub fn split(path: &Path) -> Result<Option<RankLogs>> {
    if path.as_os_str() == "-" {
        return Ok(None);
    }
    if path.is_dir() {
        // Any other directory gets the usual "not a log file" error when it is opened.
        return torchrun_log_dir(path);
    }
    let Ok(input) = read(path) else {
        return Ok(None); // the usual open error follows
    };
    let (head, _) = read_all(input.take(SNIFF_BYTES));
    let Some(launcher) = sniff(&head) else {
        return Ok(None);
    };
    // `plan` needs each rank's lines (its steady iteration is cut out of them); `report` and
    // `advise` read a labelled log as it streams instead (the CLI's loader).
    let (all, _) = read_all(read(path)?);
    let s = demux(&all, launcher);
    Ok(Some(RankLogs {
        source: path.display().to_string(),
        launcher: launcher.as_str().to_string(),
        ranks: s
            .ranks
            .into_iter()
            .map(|(rank, bytes)| RankLines { rank, bytes })
            .collect(),
    }))
}

/// Whether the file at `path` is one process's log: no launcher rank labels in its first MiB
/// (what [`split`] looks at), and not a directory of rank logs.
pub fn is_one_process(path: &Path) -> bool {
    if path.is_dir() {
        return false;
    }
    let Ok(input) = read(path) else { return true };
    let (head, _) = read_all(input.take(SNIFF_BYTES));
    sniff(&head).is_none()
}

/// The error of a command that takes one process's log, when `path` is a multi-rank one
/// ([`one_process_only`]); `None` for one process's log. Only the first MiB of a labelled log
/// is read: its ranks are the ranks labelled there (a launcher's ranks all start at once), so
/// a log of many GB is refused at once, without holding it in memory.
pub fn multi_rank_error(path: &Path) -> Result<Option<RankLogError>> {
    if path.as_os_str() == "-" {
        return Ok(None);
    }
    if path.is_dir() {
        return Ok(torchrun_log_files(path)?.map(|f| {
            let ranks: Vec<u32> = f.files.iter().map(|r| r.0).collect();
            one_process_only(&f.source, &f.launcher, &ranks)
        }));
    }
    let Ok(input) = read(path) else {
        return Ok(None); // the usual open error follows
    };
    let (head, _) = read_all(input.take(SNIFF_BYTES));
    Ok(sniff(&head).map(|launcher| {
        let ranks: Vec<u32> = demux(&head, launcher).ranks.into_keys().collect();
        one_process_only(&path.display().to_string(), launcher.as_str(), &ranks)
    }))
}

/// A log as `report` reads it.
pub enum Source {
    /// One log whose lines carry `launcher`'s rank labels, to be split while it is read.
    Labelled {
        source: String,
        launcher: profilednn_verbose::launcher::Launcher,
        input: LogInput,
    },
    /// A torchrun `--log-dir` tree: a log per rank.
    Files(RankFiles),
    /// One process's lines, as they come.
    Single(LogInput),
}

/// What `path` holds (stdin included), opened and not yet read beyond its first MiB, which
/// says whether its lines carry rank labels. Stdin's MiB is put back in front of the rest:
/// labelled or not, a pipe is read once, as it comes, and never held in memory.
pub fn split_or_open(path: &Path) -> Result<Source> {
    if path.as_os_str() != "-" {
        if path.is_dir() {
            if let Some(files) = torchrun_log_files(path)? {
                return Ok(Source::Files(files));
            }
        } else if let Ok(input) = read(path) {
            let (head, _) = read_all(input.take(SNIFF_BYTES));
            if let Some(launcher) = sniff(&head) {
                return Ok(Source::Labelled {
                    source: path.display().to_string(),
                    launcher,
                    input: LogInput::open(path).map_err(RankLogError::Open)?,
                });
            }
        }
        return Ok(Source::Single(
            LogInput::open(path).map_err(RankLogError::Open)?,
        ));
    }
    let LogInput::Stream {
        reader: mut stdin, ..
    } = LogInput::open(path).map_err(RankLogError::Open)?
    else {
        return Err(RankLogError::StdinNotStream);
    };
    let (head, head_error) = read_all(stdin.by_ref().take(SNIFF_BYTES));
    if let Some(e) = head_error {
        return Err(RankLogError::Stdin(e));
    }
    let launcher = sniff(&head);
    let input = LogInput::Stream {
        path: path.into(),
        reader: Box::new(std::io::Cursor::new(head).chain(stdin)),
        compressed_len: None,
    };
    Ok(match launcher {
        Some(launcher) => Source::Labelled {
            source: "<stdin>".into(),
            launcher,
            input,
        },
        None => Source::Single(input),
    })
}

/// Everything readable: a truncated gzip keeps the bytes before the cut, and says why.
fn read_all(mut r: impl Read) -> (Vec<u8>, Option<std::io::Error>) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (out, Some(e)),
        }
    }
}

/// The error of a command that takes one process's log given a multi-rank one.
pub fn one_process_only(source: &str, launcher: &str, ranks: &[u32]) -> RankLogError {
    RankLogError::MultiRank {
        log: source.to_string(),
        launcher: launcher.to_string(),
        ranks: ranks.to_vec(),
    }
}

/// The steady training step of one process's log (from its markers and timestamps), `None`
/// when it has none or cannot be read again (stdin).
pub fn steady_step(path: &Path) -> Option<crate::ranks::SteadyStep> {
    if path.as_os_str() == "-" {
        return None;
    }
    let (bytes, _) = read_all(read(path).ok()?);
    crate::ranks::steady_step(&bytes)
}

/// The log's bytes, decompressed.
fn read(path: &Path) -> Result<Box<dyn Read>> {
    Ok(match LogInput::open(path).map_err(RankLogError::Open)? {
        LogInput::Mapped { map, .. } => Box::new(std::io::Cursor::new(map)),
        LogInput::Empty { .. } => Box::new(std::io::empty()),
        LogInput::Stream { reader, .. } => reader,
    })
}

/// torchrun `--log-dir DIR`: `DIR/<run id>_<random>/attempt_<n>/<local rank>/stdout.log`
/// (torch/distributed/elastic/multiprocessing/api.py). DIR may also be the run's or the
/// attempt's directory. The last attempt is the one reported (earlier ones were restarted).
fn torchrun_log_dir(dir: &Path) -> Result<Option<RankLogs>> {
    let Some(files) = torchrun_log_files(dir)? else {
        return Ok(None);
    };
    let mut ranks = Vec::new();
    for (rank, file) in files.files {
        let (bytes, error) = read_all(read(&file)?);
        if let Some(error) = error {
            return Err(RankLogError::Read { path: file, error });
        }
        ranks.push(RankLines { rank, bytes });
    }
    Ok(Some(RankLogs {
        source: files.source,
        launcher: files.launcher,
        ranks,
    }))
}

/// A torchrun `--log-dir` tree's per-rank files, by rank.
pub struct RankFiles {
    pub source: String,
    pub launcher: String,
    pub files: Vec<(u32, PathBuf)>,
}

/// The files of [`torchrun_log_dir`], not read: `None` when `dir` holds none.
fn torchrun_log_files(dir: &Path) -> Result<Option<RankFiles>> {
    let mut found: Vec<(PathBuf, u32, u32)> = Vec::new(); // (file, attempt, rank)
    collect(dir, 0, &mut found)?;
    let Some(last) = found.iter().map(|f| f.1).max() else {
        return Ok(None);
    };
    let runs: std::collections::BTreeSet<_> = found
        .iter()
        .filter_map(|f| f.0.ancestors().nth(3).map(Path::to_path_buf))
        .collect();
    if runs.len() > 1 {
        return Err(RankLogError::Runs {
            dir: dir.to_path_buf(),
            runs: runs.into_iter().collect(),
        });
    }
    let mut files: Vec<(u32, PathBuf)> = found
        .into_iter()
        .filter(|f| f.1 == last)
        .map(|(file, _, rank)| (rank, file))
        .collect();
    files.sort_by_key(|f| f.0);
    Ok(Some(RankFiles {
        source: dir.display().to_string(),
        launcher: format!("torchrun --log-dir (attempt {last})"),
        files,
    }))
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, u32, u32)>) -> Result<()> {
    if depth > 4 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|error| RankLogError::List {
        dir: dir.to_path_buf(),
        error,
    })?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, depth + 1, out)?;
            continue;
        }
        // `stdout.log` as torchrun writes it, or compressed afterwards.
        if !matches!(
            p.file_name().and_then(|n| n.to_str()),
            Some("stdout.log" | "stdout.log.gz")
        ) {
            continue;
        }
        let name = |n: usize| {
            p.ancestors()
                .nth(n)
                .and_then(|a| a.file_name())
                .and_then(|n| n.to_str())
                .map(str::to_string)
        };
        let rank = name(1).and_then(|r| r.parse::<u32>().ok());
        let attempt = name(2)
            .and_then(|a| a.strip_prefix("attempt_").map(str::to_string))
            .and_then(|a| a.parse::<u32>().ok());
        if let (Some(rank), Some(attempt)) = (rank, attempt) {
            out.push((p, attempt, rank));
        }
    }
    Ok(())
}
