//! The interpreter a `record --torch` run trained with, kept in its log (a
//! `profilednn,python,PATH` line after the node line): the whole-step replay runs PyTorch
//! through that interpreter, so that `replay LOG --torch-trace TRACE` works from the bare
//! binary when the venv is not on the PATH.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The line's prefix.
pub const PYTHON_LINE: &str = "profilednn,python,";

/// How far into the log the line is looked for (it is written before the program's output).
const HEAD_BYTES: u64 = 64 << 10;

/// The line `record --torch` writes for `interpreter`.
pub fn line(interpreter: &Path) -> String {
    format!("{PYTHON_LINE}{}", interpreter.display())
}

/// The interpreter named by a log's first bytes, if a line names one.
pub fn of_head(head: &[u8]) -> Option<PathBuf> {
    String::from_utf8_lossy(head)
        .lines()
        .find_map(|l| l.strip_prefix(PYTHON_LINE))
        .map(|p| PathBuf::from(p.trim_end()))
        .filter(|p| !p.as_os_str().is_empty())
}

/// The interpreter the log at `log` was recorded with (plain or gzip), if it says.
pub fn of_log(log: &Path) -> Option<PathBuf> {
    if log.as_os_str() == "-" {
        return None;
    }
    let file = std::fs::File::open(log).ok()?;
    let mut head = Vec::new();
    let _ = profilednn_verbose::gzip::decompressed(file)
        .take(HEAD_BYTES)
        .read_to_end(&mut head);
    of_head(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_as_the_interpreter() {
        let py = Path::new("/opt/venv/bin/python3.12");
        let log = format!(
            "profilednn,node,n0,rank,0,host,h\n{}\nonednn_verbose,v1,info,oneDNN v3.13.3\n",
            line(py)
        );
        assert_eq!(of_head(log.as_bytes()).as_deref(), Some(py));
        assert_eq!(of_head(b"onednn_verbose,v1,info,x\n"), None);
        assert_eq!(of_head(b"profilednn,python,\n"), None);
    }
}
