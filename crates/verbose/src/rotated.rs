//! Rotated log sets, read in order as one log.
//!
//! oneDNN's file logger (`ONEDNN_VERBOSE_LOGFILE=train.log`, see [`crate::spdlog`]) is spdlog's
//! rotating file sink: when `train.log` reaches its size (50 MB by default) it becomes
//! `train.1.log`, the older `train.1.log` becomes `train.2.log`, and so on up to
//! `ONEDNN_VERBOSE_NUM_LOGFILES` (10). logrotate names the same set `train.log`, `train.log.1`,
//! `train.log.2.gz`, …. In both the file without a number is the newest and a higher number is
//! older, so a run reads from the highest number down to the base.
//!
//! A set is only formed when its base (the file without a number) is among the files: per-rank
//! logs named `train.0.log`, `train.1.log` without a `train.log` stay separate logs.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Where `path` sits in a rotated set: the set's base path and the file's number (`None` for
/// the base itself).
fn place(path: &Path) -> (PathBuf, Option<u32>) {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return (path.to_path_buf(), None);
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    // A compressed member (`train.log.2.gz`, `train.2.log.gz`) is the member without `.gz`.
    let bare = name.strip_suffix(".gz").unwrap_or(name);
    let parts: Vec<&str> = bare.split('.').collect();
    let number = |s: &str| {
        (!s.is_empty() && s.len() <= 9 && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    // logrotate: `train.log.N`: a number after the whole name.
    if parts.len() >= 2 {
        if let Some(n) = number(parts[parts.len() - 1]) {
            let base = parts[..parts.len() - 1].join(".");
            // `train.1.log` is spdlog's form, not logrotate's `train.1` + `.log`.
            if !base.is_empty() {
                return (dir.join(base), Some(n));
            }
        }
    }
    // spdlog: `train.N.log`: a number before the last extension.
    if parts.len() >= 3 {
        if let Some(n) = number(parts[parts.len() - 2]) {
            let mut base = parts[..parts.len() - 2].join(".");
            base.push('.');
            base.push_str(parts[parts.len() - 1]);
            return (dir.join(base), Some(n));
        }
    }
    (dir.join(bare), None)
}

/// The paths grouped into logs, in the order given: a rotated set (its base among the paths,
/// and at least one numbered file of it) becomes one group, oldest file first, placed where its
/// first file was; every other path is a group of its own.
pub fn group(paths: &[PathBuf]) -> Vec<Vec<PathBuf>> {
    let placed: Vec<(PathBuf, Option<u32>)> = paths.iter().map(|p| place(p)).collect();
    let mut members: BTreeMap<&Path, Vec<usize>> = BTreeMap::new();
    for (i, (base, _)) in placed.iter().enumerate() {
        members.entry(base.as_path()).or_default().push(i);
    }
    let is_set = |ix: &[usize]| {
        ix.len() >= 2
            && ix.iter().filter(|&&i| placed[i].1.is_none()).count() == 1
            && ix.iter().all(|&i| {
                // Two numbered files with one number (`a.1.log`, `a.log.1`) are no one set.
                ix.iter().filter(|&&j| placed[j].1 == placed[i].1).count() == 1
            })
    };
    let mut out = Vec::new();
    let mut done = vec![false; paths.len()];
    for i in 0..paths.len() {
        if done[i] {
            continue;
        }
        let ix = &members[placed[i].0.as_path()];
        if is_set(ix) {
            let mut set: Vec<usize> = ix.clone();
            // Highest number first, the base (None) last.
            set.sort_by_key(|&j| std::cmp::Reverse(placed[j].1.map_or(-1, i64::from)));
            for &j in &set {
                done[j] = true;
            }
            out.push(set.into_iter().map(|j| paths[j].clone()).collect());
        } else {
            done[i] = true;
            out.push(vec![paths[i].clone()]);
        }
    }
    out
}

/// The files of `dir` (not hidden, not directories), sorted by name.
pub fn files_in(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The files of a directory that holds one rotated set and nothing else, oldest first.
pub fn set_in_dir(dir: &Path) -> io::Result<Option<Vec<PathBuf>>> {
    let files = files_in(dir)?;
    let mut groups = group(&files);
    Ok((groups.len() == 1 && groups[0].len() >= 2).then(|| groups.remove(0)))
}

/// The files of a set, read one after the other as one stream, each decompressed when it is
/// gzip (by its magic bytes). A file that does not end with a newline gets one, so that its
/// last line and the next file's first stay two lines.
pub struct Concat {
    files: std::vec::IntoIter<PathBuf>,
    current: Option<Box<dyn Read + Send>>,
    last: u8,
    newline_due: bool,
}

impl Concat {
    pub fn new(files: Vec<PathBuf>) -> Concat {
        Concat {
            files: files.into_iter(),
            current: None,
            last: b'\n',
            newline_due: false,
        }
    }

    fn open(path: &Path) -> io::Result<Box<dyn Read + Send>> {
        let file = std::fs::File::open(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Ok(Box::new(crate::gzip::GzipSniff::new(
            io::BufReader::with_capacity(1 << 20, file),
        )))
    }
}

impl Read for Concat {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.newline_due {
                self.newline_due = false;
                self.last = b'\n';
                buf[0] = b'\n';
                return Ok(1);
            }
            let Some(r) = self.current.as_mut() else {
                match self.files.next() {
                    Some(p) => {
                        self.current = Some(Self::open(&p)?);
                        continue;
                    }
                    None => return Ok(0),
                }
            };
            let n = r.read(buf)?;
            if n > 0 {
                self.last = buf[n - 1];
                return Ok(n);
            }
            self.current = None;
            if self.last != b'\n' && self.files.len() > 0 {
                self.newline_due = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathBuf {
        PathBuf::from(s)
    }

    #[test]
    fn spdlog_and_logrotate_sets_read_oldest_first() {
        let g = group(&[p("d/train.log"), p("d/train.1.log"), p("d/train.2.log")]);
        assert_eq!(
            g,
            vec![vec![
                p("d/train.2.log"),
                p("d/train.1.log"),
                p("d/train.log")
            ]]
        );
        let g = group(&[
            p("train.log.1"),
            p("other.log"),
            p("train.log"),
            p("train.log.2.gz"),
        ]);
        assert_eq!(
            g,
            vec![
                vec![p("train.log.2.gz"), p("train.log.1"), p("train.log")],
                vec![p("other.log")],
            ]
        );
    }

    #[test]
    fn per_rank_logs_without_a_base_stay_apart() {
        let g = group(&[p("train.0.log"), p("train.1.log")]);
        assert_eq!(g, vec![vec![p("train.0.log")], vec![p("train.1.log")]]);
        let g = group(&[p("a.log"), p("b.log")]);
        assert_eq!(g, vec![vec![p("a.log")], vec![p("b.log")]]);
    }

    #[test]
    fn concatenation_keeps_lines_apart() {
        let dir = std::env::temp_dir().join(format!("profilednn-rotated-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.1.log"), b"one\ntwo").unwrap();
        std::fs::write(dir.join("a.log"), b"three\n").unwrap();
        let mut s = String::new();
        Concat::new(vec![dir.join("a.1.log"), dir.join("a.log")])
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "one\ntwo\nthree\n");
        assert_eq!(
            set_in_dir(&dir).unwrap(),
            Some(vec![dir.join("a.1.log"), dir.join("a.log")])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
