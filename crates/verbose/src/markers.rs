//! The markers that make a line one ProfileDNN reads: oneDNN's verbose prefixes of every
//! generation, and the iteration markers training scripts print. Known here only, so that the
//! parser, the profile's iteration count and `profilednn record`'s filter cannot disagree.

use serde::Serialize;

/// The first field, which names the library generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Marker {
    /// MKL-DNN 0.x and 1.0 (`mkldnn_verbose`).
    Mkldnn,
    /// DNNL 1.1 … oneDNN 2.4 (`dnnl_verbose`).
    Dnnl,
    /// oneDNN 2.5 and later (`onednn_verbose`).
    Onednn,
}

impl Marker {
    pub fn as_str(self) -> &'static str {
        match self {
            Marker::Mkldnn => "mkldnn_verbose",
            Marker::Dnnl => "dnnl_verbose",
            Marker::Onednn => "onednn_verbose",
        }
    }
}

/// The verbose prefixes, each with the marker it stands for (MKL-DNN 0.x, DNNL 1.x–2.x,
/// oneDNN 2.x–3.x).
pub const VERBOSE_PREFIXES: [(&[u8], Marker); 3] = [
    (b"onednn_verbose,", Marker::Onednn),
    (b"dnnl_verbose,", Marker::Dnnl),
    (b"mkldnn_verbose,", Marker::Mkldnn),
];

/// What ProfileDNN's documented marker line starts with: `profilednn,iteration,N`.
pub const ITERATION_MARKER: &[u8] = b"profilednn,iteration";

/// What the corpus' capture scripts print around an iteration: `### ITER n BEGIN` / `END`.
pub const CORPUS_ITERATION_MARKER: &[u8] = b"### ITER ";

/// A line that starts an iteration: `profilednn,iteration,N`, or `### ITER n BEGIN`.
pub fn is_iteration_marker(line: &[u8]) -> bool {
    (line.starts_with(CORPUS_ITERATION_MARKER) && memchr::memmem::find(line, b"BEGIN").is_some())
        || line.starts_with(ITERATION_MARKER)
}

/// Where the first verbose prefix of `line` starts, if it has one. It need not be at the
/// start: a verbose line can follow application output that did not end with a newline
/// (`loss=0.3onednn_verbose,…`, a torn line).
pub fn verbose_prefix_at(line: &[u8]) -> Option<usize> {
    const SUFFIX: &[u8] = b"_verbose,";
    let p = memchr::memmem::find(line, SUFFIX)?;
    let end = p + SUFFIX.len();
    VERBOSE_PREFIXES
        .iter()
        .find(|(m, _)| end >= m.len() && line[end - m.len()..].starts_with(m))
        .map(|(m, _)| end - m.len())
}

/// Where the part of `line` that belongs in a log starts: 0 for an iteration marker (of either
/// kind, `END` lines too, so the log keeps what the script printed), the verbose prefix for a
/// verbose line, `None` for the application's own output.
pub fn log_part_start(line: &[u8]) -> Option<usize> {
    if line.starts_with(ITERATION_MARKER) || line.starts_with(CORPUS_ITERATION_MARKER) {
        return Some(0);
    }
    verbose_prefix_at(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_verbose_lines_even_after_partial_output() {
        assert_eq!(
            log_part_start(b"onednn_verbose,v1,primitive,exec,cpu"),
            Some(0)
        );
        assert_eq!(log_part_start(b"dnnl_verbose,exec,cpu,reorder"), Some(0));
        assert_eq!(log_part_start(b"mkldnn_verbose,exec,reorder"), Some(0));
        assert_eq!(log_part_start(b"loss=0.3onednn_verbose,v1,exec"), Some(8));
        assert_eq!(log_part_start(b"profilednn,iteration,3"), Some(0));
        assert_eq!(log_part_start(b"### ITER 2 END"), Some(0));
        assert_eq!(log_part_start(b"epoch 1 loss 0.3"), None);
        assert_eq!(log_part_start(b"my_verbose,flag"), None);
        assert_eq!(log_part_start(b"_verbose,"), None);
    }

    #[test]
    fn iteration_markers_start_iterations() {
        assert!(is_iteration_marker(b"profilednn,iteration,7"));
        assert!(is_iteration_marker(b"### ITER 0 BEGIN"));
        assert!(!is_iteration_marker(b"### ITER 0 END"));
        assert!(!is_iteration_marker(b"iteration 3"));
    }
}
