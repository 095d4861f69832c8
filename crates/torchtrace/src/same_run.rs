//! Whether a PyTorch trace and a oneDNN log are of the same run, by their clocks: the trace's
//! epoch span (`baseTimeNanoseconds` + its events) and the log's timestamps must overlap. A
//! trace of another run would put that run's step split, framework ops and advice into this
//! log's report, so every command refuses it ([`AnotherRun`]) rather than warn and go on.

use super::TorchTrace;
use std::path::{Path, PathBuf};

/// How far apart the trace's clock and the log's are, when they do not overlap.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockGap {
    /// Seconds between the end of one and the start of the other.
    pub gap_s: f64,
    /// The trace ends before the log starts (else it starts after the log ends).
    pub trace_first: bool,
}

impl std::fmt::Display for ClockGap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the trace and the log do not overlap in time (the trace {} the log by {:.1} s): \
             they are of different runs",
            if self.trace_first {
                "ends before"
            } else {
                "starts after"
            },
            self.gap_s
        )
    }
}

/// The trace's span on the epoch clock (ms), when it has a base time and an op.
pub fn trace_span_ms(trace: &TorchTrace) -> Option<(f64, f64)> {
    let base_ms = trace.base_ns? / 1e6;
    let start = trace.ops.iter().map(|o| o.start).reduce(f64::min)?;
    let end = trace.ops.iter().map(|o| o.end).reduce(f64::max)?;
    Some((base_ms + start / 1e3, base_ms + end / 1e3))
}

/// The gap between the trace's clock and the log's span (epoch ms), when they do not overlap;
/// `None` when they do, or when either has no clock (nothing says they are of other runs).
pub fn clock_gap(trace: &TorchTrace, log_span_ms: Option<(f64, f64)>) -> Option<ClockGap> {
    let (ta, tb) = trace_span_ms(trace)?;
    let (a, b) = log_span_ms?;
    if tb < a {
        Some(ClockGap {
            gap_s: (a - tb) / 1e3,
            trace_first: true,
        })
    } else if b < ta {
        Some(ClockGap {
            gap_s: (ta - b) / 1e3,
            trace_first: false,
        })
    } else {
        None
    }
}

/// A trace given with a log of another run: refused by every command that takes
/// `--torch-trace` (report, advise, diff, replay, plan, project).
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{}: not the trace of {}: {gap}. Its step split, framework ops and advice would be another \
     run's: pass the trace recorded with this log (`profilednn record --torch -o LOG` writes it \
     beside LOG, as LOG's stem + .trace.json), or drop --torch-trace for the log's own report",
    trace.display(),
    log.display()
)]
pub struct AnotherRun {
    pub trace: PathBuf,
    pub log: PathBuf,
    pub gap: ClockGap,
}

/// [`clock_gap`] as an error naming both files.
pub fn check(
    trace: &TorchTrace,
    trace_path: &Path,
    log_path: &Path,
    log_span_ms: Option<(f64, f64)>,
) -> Result<(), AnotherRun> {
    match clock_gap(trace, log_span_ms) {
        None => Ok(()),
        Some(gap) => Err(AnotherRun {
            trace: trace_path.to_path_buf(),
            log: log_path.to_path_buf(),
            gap,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    fn trace(base_ms: f64, ops_us: &[(f64, f64)]) -> TorchTrace {
        TorchTrace {
            base_ns: Some(base_ms * 1e6),
            ops: ops_us
                .iter()
                .map(|&(start, end)| Op::cpu("aten::add", start, end))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn clocks_apart_are_another_run_and_overlapping_ones_are_not() {
        // Trace: 1000 ms + [0, 2000 µs] = [1000, 1002] ms.
        let t = trace(1000.0, &[(0.0, 500.0), (1500.0, 2000.0)]);
        assert_eq!(clock_gap(&t, Some((1001.0, 1010.0))), None);
        let g = clock_gap(&t, Some((4002.0, 5000.0))).unwrap();
        assert!(g.trace_first && (g.gap_s - 3.0).abs() < 1e-9, "{g:?}");
        let g = clock_gap(&t, Some((0.0, 500.0))).unwrap();
        assert!(!g.trace_first && (g.gap_s - 0.5).abs() < 1e-9, "{g:?}");
        // No clock on either side: nothing to say.
        assert_eq!(clock_gap(&t, None), None);
        let e = check(
            &t,
            Path::new("b.trace"),
            Path::new("a.log"),
            Some((0.0, 500.0)),
        );
        let m = e.unwrap_err().to_string();
        assert!(m.starts_with("b.trace: not the trace of a.log: "), "{m}");
        assert!(m.contains("starts after the log by 0.5 s"), "{m}");
    }
}
