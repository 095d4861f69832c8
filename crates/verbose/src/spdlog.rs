//! oneDNN's file logger (`ONEDNN_VERBOSE_LOGFILE`, a build option since 3.6, `src/common/logging.cpp`).
//!
//! With a log file set, oneDNN hands each verbose line to spdlog's rotating file logger named
//! `oneDNN`, whose default pattern puts `[2026-04-02 10:15:32.123] [oneDNN] [info] ` before
//! `onednn_verbose,…`. The logger also writes lines of its own (a separator of dashes and
//! `logger enabled,logfile::…,size::…,num_logfiles::…`). oneDNN's own converter drops such
//! logs whole; we strip the prefix so that the line underneath is read as usual.

/// What follows spdlog's prefix `[date time] [logger] [level] `, or `None` when `line` does not
/// start with one. Only the shape is checked (three bracketed fields separated by one space,
/// then a space), so any logger name and level (`info`, `warning`, `error`, …) is accepted; the
/// first field must look like a date and time, which tells it apart from launcher labels such
/// as torchrun's `[default0]:` or Open MPI's `[1,0]<stdout>:`.
#[inline]
pub fn strip_prefix(line: &[u8]) -> Option<&[u8]> {
    let mut rest = line;
    for field in 0..3 {
        rest = rest.strip_prefix(b"[")?;
        // Fields are short; a `]` far away is application text in brackets.
        let close = memchr::memchr(b']', &rest[..rest.len().min(64)])?;
        let inside = &rest[..close];
        if field == 0 && !looks_like_date_time(inside) {
            return None;
        }
        if inside.is_empty() || inside.contains(&b'[') {
            return None;
        }
        rest = rest[close + 1..].strip_prefix(b" ")?;
    }
    Some(rest)
}

/// Whether `rest` (what follows the prefix) is one of the logger's own lines: its separator of
/// dashes, or `logger enabled,logfile::…`.
pub fn is_logger_line(rest: &[u8]) -> bool {
    rest.is_empty()
        || rest.starts_with(b"logger enabled,")
        || (rest.len() >= 3 && rest.iter().all(|&c| c == b'-'))
}

/// `2026-04-02 10:15:32.123`: digits, with `-`, ` `, `:`, `.` or `,` between them (spdlog's
/// `%Y-%m-%d %H:%M:%S.%e`, and patterns close to it).
fn looks_like_date_time(s: &[u8]) -> bool {
    s.len() >= 8
        && s.first().is_some_and(u8::is_ascii_digit)
        && s.contains(&b':')
        && s.iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b' ' | b':' | b'.' | b',' | b'T'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_the_default_pattern_of_any_level() {
        assert_eq!(
            strip_prefix(b"[2026-04-02 10:15:32.123] [oneDNN] [info] onednn_verbose,v1,exec"),
            Some(&b"onednn_verbose,v1,exec"[..])
        );
        assert_eq!(
            strip_prefix(b"[2026-04-02 10:15:32.123] [oneDNN] [warning] onednn_verbose,v1,warn"),
            Some(&b"onednn_verbose,v1,warn"[..])
        );
        assert_eq!(
            strip_prefix(b"[2026-04-02 10:15:32.123] [oneDNN] [info] -----"),
            Some(&b"-----"[..])
        );
    }

    #[test]
    fn only_the_loggers_own_lines_are_logger_lines() {
        use crate::line::{classify, Line, SkipReason};
        let kind = |l: &[u8]| match classify(l) {
            Line::Skip(r) => Some(r),
            _ => None,
        };
        assert_eq!(
            kind(b"[2026-04-02 10:15:32.123] [oneDNN] [info] ---------------"),
            Some(SkipReason::Logger)
        );
        assert_eq!(
            kind(b"[2026-04-02 10:15:32.123] [oneDNN] [info] logger enabled,logfile::a.log,size::1,num_logfiles::2"),
            Some(SkipReason::Logger)
        );
        // Python's logging (DeepSpeed) has the same shape: application output.
        assert_eq!(
            kind(b"[2026-04-02 10:15:32,123] [INFO] [engine.py:1:step] loss=1.0"),
            Some(SkipReason::Foreign)
        );
        // Many prefixes in one line are stripped once, not unwound recursively.
        let mut long = b"[2026-04-02 10:15:32.123] [a] [b] ".repeat(100_000);
        long.extend_from_slice(b"x");
        assert_eq!(kind(&long), Some(SkipReason::Foreign));
    }

    #[test]
    fn launcher_labels_and_application_text_are_not_prefixes() {
        for line in [
            &b"[default0]:onednn_verbose,v1,exec"[..],
            b"[1,0]<stdout>:onednn_verbose,v1,exec",
            b"[W init.cpp:12] [x] [y] warning",
            b"[2026-04-02 10:15:32.123] [oneDNN]",
            b"[2026-04-02 10:15:32.123] [oneDNN] [info]",
            b"[2026-04-02 10:15:32.123][oneDNN][info] x",
            b"[] [oneDNN] [info] x",
            b"[12:00:00] [] [info] x",
        ] {
            assert_eq!(
                strip_prefix(line),
                None,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
