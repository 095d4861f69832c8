//! The all-reduce rate a training shows itself: a multi-rank run's time outside oneDNN per
//! iteration, less what the single-rank run of the same training spends there (scaled to the
//! multi-rank run's samples per thread, as the plan scales it), is the all-reduce the ranks
//! wait for — the part DDP could not overlap with the backward pass, which is what the
//! iteration pays. Its rate is then a rank's ring bytes over that time.

use super::{allreduce, Outside};
use serde::Serialize;

/// The rate and the figures it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measured {
    /// GB/s per rank (ring bytes / time).
    pub gbps: f64,
    /// The all-reduce time per iteration: `multi_outside_ms − single_outside_ms`.
    pub exposed_ms: f64,
    pub multi_outside_ms: f64,
    /// The single-rank run's outside time at the multi-rank run's samples per thread.
    pub single_outside_ms: f64,
    pub ranks: u64,
}

/// Why the two runs give no rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateError {
    #[error("the all-reduce log holds {0} rank(s): give a log of 2 or more ranks of the same training (torchrun --tee 3), or --allreduce-gbps")]
    OneRank(u64),
    #[error("the multi-rank run spends {multi:.1} ms per iteration outside oneDNN, no more than the single-rank run's {single:.1} ms: no all-reduce time to measure (a different training, or too noisy a machine?); give --allreduce-gbps")]
    NoExtraTime { multi: f64, single: f64 },
    #[error(
        "the samples per thread of the two runs cannot be compared (a zero batch or thread count)"
    )]
    NoScale,
}

/// The rate of the all-reduce of `gradient_bytes` over `ranks`, from the multi-rank run's
/// outside time against the single-rank run's.
pub fn from_runs(
    single: &Outside,
    multi: &Outside,
    ranks: u64,
    gradient_bytes: u64,
) -> Result<Measured, RateError> {
    if ranks < 2 {
        return Err(RateError::OneRank(ranks));
    }
    let single_ms = single
        .scaled(multi.logged_batch, multi.logged_threads)
        .ok_or(RateError::NoScale)?;
    let exposed_ms = multi.logged_ms - single_ms;
    let no_extra = || RateError::NoExtraTime {
        multi: multi.logged_ms,
        single: single_ms,
    };
    let gbps = allreduce::gbps_of(gradient_bytes, ranks, exposed_ms).ok_or_else(no_extra)?;
    Ok(Measured {
        gbps,
        exposed_ms,
        multi_outside_ms: multi.logged_ms,
        single_outside_ms: single_ms,
        ranks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ms: f64, batch: u64, threads: u64) -> Outside {
        Outside {
            logged_ms: ms,
            logged_onednn_ms: None,
            steady_iterations: 4,
            logged_threads: threads,
            logged_batch: batch,
            logged_allreduce_ms: 0.0,
        }
    }

    #[test]
    fn exposed_time_and_rate_by_hand() {
        // 1x2 at batch 16: 60 ms outside; 2x1 at batch 8: 140 ms. Same 8 samples per thread:
        // 80 ms of all-reduce; 2 ranks of 40 MB: 40e6 B / 80 ms = 0.5 GB/s.
        let m = from_runs(&run(60.0, 16, 2), &run(140.0, 8, 1), 2, 40_000_000).unwrap();
        assert!((m.exposed_ms - 80.0).abs() < 1e-9);
        assert!((m.gbps - 0.5).abs() < 1e-12, "{}", m.gbps);
        // 4 samples per thread in the multi-rank run: the single run's 60 ms counts as 30.
        let m = from_runs(&run(60.0, 16, 2), &run(110.0, 4, 1), 2, 40_000_000).unwrap();
        assert!((m.single_outside_ms - 30.0).abs() < 1e-9);
        assert!((m.exposed_ms - 80.0).abs() < 1e-9);
    }

    #[test]
    fn refusals() {
        let e = from_runs(&run(60.0, 16, 2), &run(50.0, 8, 1), 2, 1000).unwrap_err();
        assert!(matches!(e, RateError::NoExtraTime { .. }), "{e}");
        assert!(e.to_string().contains("--allreduce-gbps"));
        assert_eq!(
            from_runs(&run(60.0, 16, 2), &run(90.0, 8, 1), 1, 1000),
            Err(RateError::OneRank(1))
        );
        assert_eq!(
            from_runs(&run(60.0, 16, 2), &run(90.0, 8, 0), 2, 1000),
            Err(RateError::NoScale)
        );
    }
}
