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
    #[error("{}: {message}", path.display())]
    NodeLine { path: PathBuf, message: String },
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

/// The node line `record --ranks` wrote at the top of `path` (node, global rank of its first
/// rank), from its first MiB; `None` for stdin, a directory or a log without one (or that
/// cannot be opened: the usual open error follows); an error naming the file and line for a
/// node line that does not parse.
pub fn node_of(path: &Path) -> Result<Option<(String, u32)>> {
    if path.as_os_str() == "-" || path.is_dir() {
        return Ok(None);
    }
    let Ok(input) = read(path) else {
        return Ok(None);
    };
    let (head, _) = read_all(input.take(SNIFF_BYTES));
    node_line_of(&head).map_err(|message| RankLogError::NodeLine {
        path: path.to_path_buf(),
        message,
    })
}

/// What a multi-node log says of its node, in its first line: `profilednn,node,NAME,rank,R,
/// host,HOST`, R the global rank of the log's first rank (a labelled log's rank `k` is R + k;
/// a log without labels is rank R's). `record --ranks` writes it from what the launcher says
/// (the CLI's `record_ranks::node_line`). Without it, ranks of logs recorded on different nodes
/// cannot be told apart: every node's torchrun labels its ranks from 0.
pub const NODE_LINE: &str = "profilednn,node,";

/// A log's node line, from its first MiB: (node, the global rank of its first rank); `Ok(None)`
/// without one. A node line that does not parse is an error naming its line (1-based): read as
/// an ordinary log, its node's ranks would silently clash with the other nodes'.
pub fn node_line_of(head: &[u8]) -> std::result::Result<Option<(String, u32)>, String> {
    let Some(at) = memchr::memmem::find_iter(head, NODE_LINE.as_bytes())
        .find(|&at| at == 0 || head[at - 1] == b'\n')
    else {
        return Ok(None);
    };
    let end = memchr::memchr(b'\n', &head[at..]).map_or(head.len(), |e| at + e);
    let line = String::from_utf8_lossy(&head[at..end]);
    let parsed = || -> Option<(String, u32)> {
        let mut f = line[NODE_LINE.len()..].split(',');
        let node = f.next().filter(|n| !n.is_empty())?.to_string();
        (f.next()? == "rank").then_some(())?;
        Some((node, f.next()?.parse().ok()?))
    };
    parsed().map(Some).ok_or_else(|| {
        format!(
            "line {}: `{line}` is not a node line (profilednn,node,NAME,rank,R,host,HOST, as `record --ranks` writes it)",
            memchr::memchr_iter(b'\n', &head[..at]).count() + 1
        )
    })
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
    /// Each file's node (the same order as `files`), for a directory of nodes' trees; empty for
    /// one node's tree.
    pub nodes: Vec<String>,
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
        if let Some(nodes) = per_node_trees(dir, &found, &runs) {
            return Ok(Some(nodes));
        }
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
        nodes: Vec::new(),
    }))
}

/// A directory of nodes, each holding one run's torchrun `--log-dir` tree (`DIR/node0/<run
/// id>_<random>/attempt_0/0/stdout.log`, `DIR/node1/…`): torchrun writes the tree on each node
/// with the node's local ranks, so the trees' runs differ only in their random suffix. Global
/// ranks are torchrun's, node rank × ranks per node + local rank, with the nodes in the order
/// of their directories' names (numbers compared as numbers: node2 before node10), which is
/// the node rank when the directories are named by it, as `--node-rank` gives it. `None` when
/// a node directory holds more than one run, or the runs are not one per node directory.
fn per_node_trees(
    dir: &Path,
    found: &[(PathBuf, u32, u32)],
    runs: &std::collections::BTreeSet<PathBuf>,
) -> Option<RankFiles> {
    let node_of = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(dir).ok()?;
        let first = rel.components().next()?;
        Some(first.as_os_str().to_string_lossy().into_owned())
    };
    let mut by_node: std::collections::BTreeMap<String, Vec<&PathBuf>> = Default::default();
    for r in runs {
        // The run directory itself must lie inside a node directory, not be one.
        if r.parent() == Some(dir) {
            return None;
        }
        by_node.entry(node_of(r)?).or_default().push(r);
    }
    if by_node.values().any(|v| v.len() > 1) || by_node.len() < 2 {
        return None;
    }
    let mut nodes: Vec<String> = by_node.into_keys().collect();
    nodes.sort_by_key(|n| natural_key(n));
    let (mut files, mut node_names) = (Vec::new(), Vec::new());
    let mut first_rank = 0u32;
    for node in &nodes {
        let mine: Vec<&(PathBuf, u32, u32)> = found
            .iter()
            .filter(|f| node_of(&f.0).as_deref() == Some(node.as_str()))
            .collect();
        let last = mine.iter().map(|f| f.1).max()?;
        let mut local: Vec<(u32, PathBuf)> = mine
            .iter()
            .filter(|f| f.1 == last)
            .map(|f| (f.2, f.0.clone()))
            .collect();
        local.sort_by_key(|f| f.0);
        let count = local.len() as u32;
        for (rank, file) in local {
            files.push((first_rank + rank, file));
            node_names.push(node.clone());
        }
        first_rank += count;
    }
    Some(RankFiles {
        source: dir.display().to_string(),
        launcher: format!(
            "torchrun --log-dir, a tree per node ({} nodes)",
            nodes.len()
        ),
        files,
        nodes: node_names,
    })
}

/// A name's sort key with its runs of digits as numbers (`node2` < `node10`).
fn natural_key(s: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            out.push((rest[..digits].parse().unwrap_or(u64::MAX), String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest.chars().take_while(|c| !c.is_ascii_digit()).count();
            let end = rest.char_indices().nth(text).map_or(rest.len(), |(i, _)| i);
            out.push((0, rest[..end].to_string()));
            rest = &rest[end..];
        }
    }
    out
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
