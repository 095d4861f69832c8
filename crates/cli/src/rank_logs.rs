//! The ranks of a multi-rank run, from either form it can take on disk: one log whose lines
//! carry a launcher's rank label (what `profilednn record` writes for torchrun `--tee`, mpirun
//! `--tag-output`, …), or torchrun's `--log-dir` tree of one `stdout.log` per local rank.

use anyhow::{bail, Context, Result};
use profilednn_verbose::demux::{demux, sniff};
use profilednn_verbose::LogInput;
use std::io::Read;
use std::path::{Path, PathBuf};

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
    /// Verbose lines no rank label claims (kept as their own profile).
    pub unlabelled: Vec<u8>,
    pub unlabelled_lines: u64,
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
        return torchrun_log_dir(path).map(Some);
    }
    let mut head = Vec::new();
    read(path)?
        .take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .with_context(|| format!("{}: cannot read the log", path.display()))?;
    let Some(launcher) = sniff(&head) else {
        return Ok(None);
    };
    let mut all = Vec::new();
    read(path)?
        .read_to_end(&mut all)
        .with_context(|| format!("{}: cannot read the log", path.display()))?;
    let s = demux(&all, launcher);
    Ok(Some(RankLogs {
        source: path.display().to_string(),
        launcher: launcher.as_str().to_string(),
        ranks: s
            .ranks
            .into_iter()
            .map(|(rank, bytes)| RankLines { rank, bytes })
            .collect(),
        unlabelled_lines: s.unlabelled_profile_lines,
        unlabelled: s.unlabelled,
    }))
}

/// The log's bytes, decompressed.
fn read(path: &Path) -> Result<Box<dyn Read>> {
    Ok(match LogInput::open(path).context("cannot read the log")? {
        LogInput::Mapped { map, .. } => Box::new(std::io::Cursor::new(map)),
        LogInput::Empty { .. } => Box::new(std::io::empty()),
        LogInput::Stream { reader, .. } => reader,
    })
}

/// torchrun `--log-dir DIR`: `DIR/<run id>_<random>/attempt_<n>/<local rank>/stdout.log`
/// (torch/distributed/elastic/multiprocessing/api.py). DIR may also be the run's or the
/// attempt's directory. The last attempt is the one reported (earlier ones were restarted).
fn torchrun_log_dir(dir: &Path) -> Result<RankLogs> {
    let mut found: Vec<(PathBuf, u32, u32)> = Vec::new(); // (file, attempt, rank)
    collect(dir, 0, &mut found)?;
    let Some(last) = found.iter().map(|f| f.1).max() else {
        bail!(
            "{}: a directory, but not a torchrun --log-dir tree (no attempt_N/RANK/stdout.log \
             under it); give the log file instead",
            dir.display()
        );
    };
    let runs: std::collections::BTreeSet<_> = found
        .iter()
        .filter_map(|f| f.0.ancestors().nth(3).map(Path::to_path_buf))
        .collect();
    if runs.len() > 1 {
        bail!(
            "{}: holds the logs of {} torchrun runs ({}); name one run's directory",
            dir.display(),
            runs.len(),
            runs.iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut ranks = Vec::new();
    for (file, attempt, rank) in found {
        if attempt != last {
            continue;
        }
        let mut bytes = Vec::new();
        read(&file)?
            .read_to_end(&mut bytes)
            .with_context(|| format!("{}: cannot read the log", file.display()))?;
        ranks.push(RankLines { rank, bytes });
    }
    ranks.sort_by_key(|r| r.rank);
    Ok(RankLogs {
        source: dir.display().to_string(),
        launcher: format!("torchrun --log-dir (attempt {last})"),
        ranks,
        unlabelled: Vec::new(),
        unlabelled_lines: 0,
    })
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<(PathBuf, u32, u32)>) -> Result<()> {
    if depth > 4 {
        return Ok(());
    }
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?;
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
