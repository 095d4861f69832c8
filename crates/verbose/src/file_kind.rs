//! What a file is, from its first bytes (decompressed when gzip): so that a file given in the
//! wrong place (a PyTorch trace as the log, the log as the trace, a trace as a machine profile
//! or a replay file) is refused at once, naming what it is, what was expected and the command
//! that makes it, rather than read through to an empty result or a parser's "invalid UTF-8".

use std::io::Read;
use std::path::Path;

/// How much of a file is looked at: a PyTorch trace names `traceEvents` after its device
/// properties and distributed info (a few kB), a log's first oneDNN line may follow a script's
/// output.
const HEAD: usize = 64 << 10;

/// The kinds of file ProfileDNN reads, and what anything else is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// No byte at all (after decompression).
    Empty,
    /// A oneDNN verbose log (`onednn_verbose,` or `dnnl_verbose,` lines, or ProfileDNN's
    /// `profilednn,` marker lines).
    OnednnLog,
    /// A PyTorch profiler trace (Chrome JSON with `traceEvents`).
    TorchTrace,
    /// A machine profile (`profilednn peak -o`).
    MachineProfile,
    /// Replay results (`profilednn replay -o`).
    ReplayResults,
    /// Another ProfileDNN JSON output (report, advice, plan, diff: `"schema": "profilednn.…"`).
    OtherProfilednnJson,
    /// JSON of another kind.
    OtherJson,
    /// Anything else (binary or text).
    Other,
}

impl FileKind {
    /// The kind of a file that starts with `head` (decompressed bytes).
    pub fn of_head(head: &[u8]) -> FileKind {
        let text = String::from_utf8_lossy(head);
        let t = text.trim_start_matches('\u{feff}').trim_start();
        if t.is_empty() {
            return FileKind::Empty;
        }
        if t.starts_with('{') {
            return if t.contains("\"traceEvents\"") || t.contains("\"schemaVersion\"") {
                FileKind::TorchTrace
            } else if t.contains("\"profilednn.machine.") {
                FileKind::MachineProfile
            } else if t.contains("\"profilednn.replay.") {
                FileKind::ReplayResults
            } else if t.contains("\"profilednn.") {
                FileKind::OtherProfilednnJson
            } else {
                FileKind::OtherJson
            };
        }
        let log_line = |l: &str| {
            ["onednn_verbose,", "dnnl_verbose,", "profilednn,"]
                .iter()
                .any(|p| l.trim_start().starts_with(p))
        };
        if text.lines().any(log_line) {
            FileKind::OnednnLog
        } else {
            FileKind::Other
        }
    }

    /// The kind of the file at `path` (gzip decompressed; a `.gz` cut short is read as far as
    /// it goes).
    pub fn of_file(path: &Path) -> std::io::Result<FileKind> {
        let file = std::fs::File::open(path)?;
        let mut r = crate::gzip::decompressed(file);
        let mut head = vec![0u8; HEAD];
        let mut n = 0;
        while n < head.len() {
            match r.read(&mut head[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        Ok(FileKind::of_head(&head[..n]))
    }

    /// The kind in words, for "… is X".
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Empty => "an empty file",
            FileKind::OnednnLog => "a oneDNN verbose log",
            FileKind::TorchTrace => "a PyTorch profiler trace",
            FileKind::MachineProfile => "a machine profile (`profilednn peak -o`)",
            FileKind::ReplayResults => "a replay results file (`profilednn replay -o`)",
            FileKind::OtherProfilednnJson => "a ProfileDNN JSON output (report, advice, plan)",
            FileKind::OtherJson => "JSON of another kind",
            FileKind::Other => "not a file ProfileDNN reads",
        }
    }

    /// What a file of this kind is, and the command that makes it: "expected …".
    pub fn expected(self) -> &'static str {
        match self {
            FileKind::OnednnLog => {
                "a oneDNN verbose log (`profilednn record -o LOG -- CMD`, or ONEDNN_VERBOSE=1)"
            }
            FileKind::TorchTrace => {
                "a PyTorch profiler trace (Chrome JSON with traceEvents: `profilednn record \
                 --torch` writes LOG stem + .trace.json when the script uses \
                 `profilednn.profile()`)"
            }
            FileKind::MachineProfile => {
                "a machine profile (JSON written by `profilednn peak -o machine.json`)"
            }
            FileKind::ReplayResults => {
                "replay results (JSON written by `profilednn replay LOG -o R.json`)"
            }
            _ => "another file",
        }
    }

    /// How to use a file of this kind where it was given by mistake, when one flag takes it.
    pub fn where_it_goes(self) -> Option<&'static str> {
        match self {
            FileKind::TorchTrace => Some("pass it with --torch-trace, beside its log"),
            FileKind::MachineProfile => Some("pass it with --machine"),
            FileKind::ReplayResults => Some("pass it with --replay (project, advise, report)"),
            FileKind::OnednnLog => Some("pass it as the LOG argument"),
            _ => None,
        }
    }

    /// Why a file of this kind cannot be read as `wanted`, naming `path`; `None` when it is
    /// of the wanted kind (or of an unknown one, left to the reader's own errors).
    pub fn refusal(self, path: &Path, wanted: FileKind) -> Option<String> {
        if self == wanted || matches!(self, FileKind::Other | FileKind::OtherJson) {
            return None;
        }
        let mut m = format!(
            "{}: this is {}: expected {}",
            path.display(),
            self.describe(),
            wanted.expected()
        );
        if let Some(w) = self.where_it_goes() {
            m.push_str("; ");
            m.push_str(w);
        }
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::FileKind;
    use std::path::Path;

    #[test]
    fn kinds_from_first_bytes() {
        let trace = b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n";
        assert_eq!(FileKind::of_head(trace), FileKind::TorchTrace);
        assert_eq!(FileKind::of_head(b""), FileKind::Empty);
        assert_eq!(FileKind::of_head(b" \n\t"), FileKind::Empty);
        let log = b"training...\nonednn_verbose,v1,info,oneDNN v3.13.3\n";
        assert_eq!(FileKind::of_head(log), FileKind::OnednnLog);
        assert_eq!(
            FileKind::of_head(b"profilednn,iteration,0\n"),
            FileKind::OnednnLog
        );
        let machine = b"{\n  \"schema\": \"profilednn.machine.v2\",\n";
        assert_eq!(FileKind::of_head(machine), FileKind::MachineProfile);
        let replay = b"{\"schema\":\"profilednn.replay.v2\"}";
        assert_eq!(FileKind::of_head(replay), FileKind::ReplayResults);
        assert_eq!(FileKind::of_head(b"{\"a\": 1}"), FileKind::OtherJson);
        assert_eq!(FileKind::of_head(&[0u8, 1, 2, 200]), FileKind::Other);
    }

    #[test]
    fn refusal_names_the_file_what_it_is_and_what_was_expected() {
        let p = Path::new("t.json.gz");
        let m = FileKind::TorchTrace
            .refusal(p, FileKind::OnednnLog)
            .expect("a trace is not a log");
        assert!(m.starts_with("t.json.gz: this is a PyTorch profiler trace"));
        assert!(m.contains("expected a oneDNN verbose log"));
        assert!(m.contains("pass it with --torch-trace"));
        assert!(FileKind::OnednnLog
            .refusal(p, FileKind::OnednnLog)
            .is_none());
        assert!(FileKind::Other.refusal(p, FileKind::OnednnLog).is_none());
    }
}
