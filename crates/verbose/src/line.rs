//! The per-line fast path: recognise a verbose line and split off what every line has.

pub use crate::markers::Marker;
use crate::time::parse_ms_to_ps;
use memchr::{memchr, memrchr};
use serde::Serialize;

/// The component token of oneDNN 3.3+ lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    Primitive,
    Graph,
    Ukernel,
    Common,
}

/// Why a line was not read as a verbose line. Counted, never fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// An empty line.
    Empty,
    /// The application's own output (any text line without a verbose marker).
    Foreign,
    /// A verbose marker in the middle of a line: two writers interleaved on one line.
    Torn,
    /// Not valid UTF-8.
    InvalidUtf8,
    /// Control characters or NUL bytes: binary data in the text stream.
    Binary,
    /// The input ended without a newline; a half-written last line is not trusted.
    TruncatedLastLine,
    /// The file logger's own lines (spdlog's prefix before a separator or `logger enabled,…`):
    /// see [`crate::spdlog`].
    Logger,
    /// An iteration marker the training script printed (`### ITER n BEGIN`,
    /// `profilednn,iteration,n`): read for the iteration boundaries, not application output.
    Marker,
}

impl SkipReason {
    pub const ALL: [SkipReason; 8] = [
        SkipReason::Empty,
        SkipReason::Foreign,
        SkipReason::Torn,
        SkipReason::InvalidUtf8,
        SkipReason::Binary,
        SkipReason::TruncatedLastLine,
        SkipReason::Logger,
        SkipReason::Marker,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Empty => "empty",
            SkipReason::Foreign => "foreign",
            SkipReason::Torn => "torn",
            SkipReason::InvalidUtf8 => "invalid_utf8",
            SkipReason::Binary => "binary",
            SkipReason::TruncatedLastLine => "truncated_last_line",
            SkipReason::Logger => "logger",
            SkipReason::Marker => "marker",
        }
    }
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::Empty => "empty lines",
            SkipReason::Foreign => "application output (no verbose marker)",
            SkipReason::Torn => "torn lines (marker in mid-line: interleaved writes)",
            SkipReason::InvalidUtf8 => "invalid UTF-8",
            SkipReason::Binary => "binary data (control characters)",
            SkipReason::TruncatedLastLine => "truncated last line (no final newline)",
            SkipReason::Logger => "oneDNN's file logger's own lines (separators, 'logger enabled')",
            SkipReason::Marker => "iteration markers",
        }
    }
}

/// Diagnostic lines oneDNN prints about itself; they are run metadata, not work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Diagnostic {
    Error,
    Warning,
    /// `create:check` / `exec:check`: argument checks that failed.
    Check,
    /// `create:dispatch`: an implementation that was skipped, and why.
    Dispatch,
    /// `debuginfo` and `create_nested:*` lines.
    Debug,
    /// An operation this version does not know.
    Unknown,
}

impl Diagnostic {
    pub fn as_str(self) -> &'static str {
        match self {
            Diagnostic::Error => "error",
            Diagnostic::Warning => "warning",
            Diagnostic::Check => "check",
            Diagnostic::Dispatch => "dispatch",
            Diagnostic::Debug => "debug",
            Diagnostic::Unknown => "unknown_operation",
        }
    }
}

/// The tokens every verbose line starts with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerboseLine<'a> {
    pub marker: Marker,
    /// The `vN` format version (0 when absent).
    pub version: u32,
    /// Start time, ms since the Unix epoch (`ONEDNN_VERBOSE_TIMESTAMP=1`).
    pub timestamp: Option<f64>,
    pub component: Option<Component>,
    /// `exec`, `create:cache_miss`, `info`, …
    pub operation: &'a [u8],
    /// Everything after the operation field (may be empty).
    pub rest: &'a [u8],
}

/// What one line of a log is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line<'a> {
    Skip(SkipReason),
    /// An execution (`exec`) or creation (`create…`) of a primitive or graph partition.
    /// `body` is the text between the operation and the time (the primitive's identity);
    /// `time_ps` is `None` when the last field is not a number (then `body` is everything after
    /// the operation, and whether that is valid is decided when the body is parsed).
    Primitive {
        head: VerboseLine<'a>,
        body: &'a [u8],
        time_ps: Option<u64>,
    },
    /// Header and other `info` lines.
    Info {
        head: VerboseLine<'a>,
        text: &'a [u8],
    },
    Diagnostic {
        head: VerboseLine<'a>,
        kind: Diagnostic,
    },
    /// Starts like a verbose line but is broken; `expected` says what was missing.
    Malformed {
        marker: Marker,
        expected: &'static str,
    },
}

impl Line<'_> {
    pub fn is_verbose(&self) -> bool {
        !matches!(self, Line::Skip(_))
    }
}

use crate::markers::VERBOSE_PREFIXES as MARKERS;

/// Classifies one line (without its `\n`; a trailing `\r` is ignored).
#[inline]
pub fn classify(line: &[u8]) -> Line<'_> {
    classify_at(line, true)
}

/// [`classify`]; `spdlog` says whether an spdlog prefix may still be stripped (once: a line of
/// many prefixes is not unwound recursively).
#[inline]
fn classify_at(line: &[u8], spdlog: bool) -> Line<'_> {
    let line = match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    };
    if line.is_empty() {
        return Line::Skip(SkipReason::Empty);
    }
    let (marker, mut rest) = match line[0] {
        b'o' if line.starts_with(MARKERS[0].0) => (Marker::Onednn, &line[MARKERS[0].0.len()..]),
        b'd' if line.starts_with(MARKERS[1].0) => (Marker::Dnnl, &line[MARKERS[1].0.len()..]),
        b'm' if line.starts_with(MARKERS[2].0) => (Marker::Mkldnn, &line[MARKERS[2].0.len()..]),
        // oneDNN's file logger (ONEDNN_VERBOSE_LOGFILE) puts spdlog's prefix before each line.
        b'[' => match crate::spdlog::strip_prefix(line).filter(|_| spdlog) {
            Some(rest) => {
                return match classify_at(rest, false) {
                    // The logger's own lines; any other text behind such a prefix (Python's
                    // logging, DeepSpeed) stays application output.
                    Line::Skip(SkipReason::Foreign | SkipReason::Empty)
                        if crate::spdlog::is_logger_line(rest) =>
                    {
                        Line::Skip(SkipReason::Logger)
                    }
                    other => other,
                };
            }
            None => return Line::Skip(classify_foreign(line)),
        },
        _ => return Line::Skip(classify_foreign(line)),
    };
    // A verbose line is ASCII in practice, but free-text messages may carry anything; what we
    // hand out must be valid UTF-8 so that later stages can treat it as text.
    if crate::bytescan::has_unusual_bytes(line) {
        if std::str::from_utf8(line).is_err() {
            return Line::Skip(SkipReason::InvalidUtf8);
        }
        if line.iter().any(|&c| (c < 0x20 && c != b'\t') || c == 0x7f) {
            return Line::Skip(SkipReason::Binary);
        }
    }

    let mut version = 0u32;
    if rest.first() == Some(&b'v') {
        if let Some(c) = memchr(b',', rest) {
            let digits = &rest[1..c];
            if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                version = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse().ok())
                    .unwrap_or(u32::MAX);
                rest = &rest[c + 1..];
            }
        }
    }
    let mut timestamp = None;
    if rest.first().is_some_and(u8::is_ascii_digit) {
        let c = memchr(b',', rest).unwrap_or(rest.len());
        match crate::time::parse_decimal_f64(&rest[..c]) {
            Some(t) if t.is_finite() => timestamp = Some(t),
            _ => {
                return Line::Malformed {
                    marker,
                    expected: "a timestamp (ms since the epoch) or an operation after the marker",
                }
            }
        }
        rest = if c < rest.len() { &rest[c + 1..] } else { &[] };
    }
    let mut component = None;
    for (name, comp) in [
        (&b"primitive,"[..], Component::Primitive),
        (b"graph,", Component::Graph),
        (b"ukernel,", Component::Ukernel),
        (b"common,", Component::Common),
    ] {
        if rest.starts_with(name) {
            component = Some(comp);
            rest = &rest[name.len()..];
            break;
        }
    }
    let (operation, after) = match memchr(b',', rest) {
        Some(c) => (&rest[..c], &rest[c + 1..]),
        None => (rest, &[][..]),
    };
    if operation.is_empty() {
        return Line::Malformed {
            marker,
            expected: "an operation (exec, create, info, …) after the leading fields",
        };
    }
    let head = VerboseLine {
        marker,
        version,
        timestamp,
        component,
        operation,
        rest: after,
    };

    match operation {
        b"exec" => primitive_line(head),
        b"info" => Line::Info { head, text: after },
        b"error" => Line::Diagnostic {
            head,
            kind: Diagnostic::Error,
        },
        b"warning" | b"warn" => Line::Diagnostic {
            head,
            kind: Diagnostic::Warning,
        },
        b"debuginfo" => Line::Diagnostic {
            head,
            kind: Diagnostic::Debug,
        },
        b"create:check" | b"exec:check" => Line::Diagnostic {
            head,
            kind: Diagnostic::Check,
        },
        b"create:dispatch" => Line::Diagnostic {
            head,
            kind: Diagnostic::Dispatch,
        },
        op if op.starts_with(b"create_nested") => Line::Diagnostic {
            head,
            kind: Diagnostic::Debug,
        },
        op if op == b"create" || op.starts_with(b"create:") || op.starts_with(b"compile") => {
            primitive_line(head)
        }
        _ => Line::Diagnostic {
            head,
            kind: Diagnostic::Unknown,
        },
    }
}

#[inline]
fn primitive_line(head: VerboseLine<'_>) -> Line<'_> {
    let rest = head.rest;
    match memrchr(b',', rest) {
        Some(c) => match parse_ms_to_ps(&rest[c + 1..]) {
            Some(ps) => Line::Primitive { head, body: &rest[..c], time_ps: Some(ps) },
            None => Line::Primitive { head, body: rest, time_ps: None },
        },
        None => Line::Malformed {
            marker: head.marker,
            expected: "the primitive fields (engine,primitive,implementation,…,exec_time) after the operation",
        },
    }
}

#[cold]
fn classify_foreign(line: &[u8]) -> SkipReason {
    if crate::markers::verbose_prefix_at(line).is_some() {
        return SkipReason::Torn;
    }
    match std::str::from_utf8(line) {
        Err(_) => SkipReason::InvalidUtf8,
        Ok(s) if s.chars().any(|c| c.is_control() && c != '\t') => SkipReason::Binary,
        Ok(_) => SkipReason::Foreign,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prim(line: &str) -> (VerboseLine<'_>, &str, Option<u64>) {
        match classify(line.as_bytes()) {
            Line::Primitive {
                head,
                body,
                time_ps,
            } => (head, std::str::from_utf8(body).unwrap(), time_ps),
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn leading_tokens_of_every_generation() {
        let (h, body, t) = prim("onednn_verbose,v1,1795973218897.478027,primitive,create:cache_miss,cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:u8:a:blocked:ab::f0,,,64x256:256x128,0.36792");
        assert_eq!(
            (h.marker, h.version, h.component),
            (Marker::Onednn, 1, Some(Component::Primitive))
        );
        assert_eq!(h.timestamp, Some(1_795_973_218_897.478));
        assert_eq!(h.operation, b"create:cache_miss");
        assert_eq!(
            body,
            "cpu,matmul,brg_matmul:avx10_1_512_amx,undef,src:u8:a:blocked:ab::f0,,,64x256:256x128"
        );
        assert_eq!(t, Some(367_920_000));

        let (h, _, _) = prim("onednn_verbose,1795970522645.319092,primitive,exec,cpu,pooling,jit:avx512_core,forward_training,src_f32::blocked:aBcd16b::f0,,alg:pooling_max,mb8ic16_ih32oh16kh2sh2dh0ph0_iw32ow16kw2sw2dw0pw0,0.06");
        assert_eq!(
            (h.version, h.component, h.operation),
            (0, Some(Component::Primitive), &b"exec"[..])
        );

        let (h, body, _) = prim("mkldnn_verbose,exec,reorder,jit:uni,undef,in:f32_oihw out:f32_Ohwi16o,num:1,96x3x11x11,4.98096");
        assert_eq!(h.marker, Marker::Mkldnn);
        assert_eq!(
            body,
            "reorder,jit:uni,undef,in:f32_oihw out:f32_Ohwi16o,num:1,96x3x11x11"
        );

        let (h, _, t) = prim("dnnl_verbose,1795970310333.780029,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd:f0 dst_f32::blocked:Acdb16a:f0,,,16x3x3x3,0.00195312\r");
        assert_eq!((h.marker, h.timestamp.is_some()), (Marker::Dnnl, true));
        assert_eq!(t, Some(1_953_120));
    }

    #[test]
    fn metadata_and_diagnostics() {
        assert!(matches!(
            classify(b"onednn_verbose,v1,info,oneDNN v3.14.0 (commit 3f27)"),
            Line::Info { .. }
        ));
        assert!(matches!(
            classify(b"onednn_verbose,primitive,info,template:operation,engine"),
            Line::Info { .. }
        ));
        assert!(matches!(
            classify(
                b"onednn_verbose,v1,primitive,create:dispatch,convolution,bad flags,src/x.cpp:1"
            ),
            Line::Diagnostic {
                kind: Diagnostic::Dispatch,
                ..
            }
        ));
        assert!(matches!(
            classify(b"onednn_verbose,common,error,runtime,0 cpu devices are available but 0 was queried"),
            Line::Diagnostic { kind: Diagnostic::Error, .. }
        ));
        assert!(matches!(
            classify(b"onednn_verbose,v1,primitive,teleport,x"),
            Line::Diagnostic {
                kind: Diagnostic::Unknown,
                ..
            }
        ));
    }

    #[test]
    fn skipped_lines_by_reason() {
        assert_eq!(classify(b""), Line::Skip(SkipReason::Empty));
        assert_eq!(classify(b"\r"), Line::Skip(SkipReason::Empty));
        assert_eq!(
            classify(b"### ITER 0 BEGIN"),
            Line::Skip(SkipReason::Foreign)
        );
        assert_eq!(
            classify(b"loss=1.2onednn_verbose,exec,cpu,x"),
            Line::Skip(SkipReason::Torn)
        );
        assert_eq!(
            classify(b"abc\xff\xfe"),
            Line::Skip(SkipReason::InvalidUtf8)
        );
        assert_eq!(classify(b"\x00\x01\x02bin"), Line::Skip(SkipReason::Binary));
        assert_eq!(
            classify(b"onednn_verbose,exec,cpu,\x00junk,1"),
            Line::Skip(SkipReason::Binary)
        );
        assert_eq!(
            classify(b"onednn_verbose,exec,cpu,\xffjunk,1"),
            Line::Skip(SkipReason::InvalidUtf8)
        );
    }

    #[test]
    fn malformed_lines_say_what_was_expected() {
        assert!(matches!(
            classify(b"onednn_verbose,123abc,exec"),
            Line::Malformed { .. }
        ));
        assert!(matches!(
            classify(b"onednn_verbose,exec"),
            Line::Malformed { .. }
        ));
        assert!(matches!(
            classify(b"onednn_verbose,"),
            Line::Malformed { .. }
        ));
        // No time: the body is kept whole and judged when it is parsed.
        let (_, body, t) = prim("onednn_verbose,exec,gpu,convolution,ocl:gen9,forward_training,src_f32::blocked:abcd:f0,,,mb1");
        assert_eq!(t, None);
        assert!(body.ends_with("mb1"));
    }
}
