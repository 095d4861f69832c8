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

/// The single run's framework time at the multi run's samples per thread, and what the multi
/// run spends outside oneDNN beyond it (the all-reduce it waits for); `None`: not comparable.
fn exposed(single: &Outside, multi: &Outside) -> Option<(f64, f64)> {
    let single_ms = single.scaled(multi.logged_batch, multi.logged_threads)?;
    Some((single_ms, multi.logged_ms - single_ms))
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
    let (single_ms, exposed_ms) = exposed(single, multi).ok_or(RateError::NoScale)?;
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

/// The network rate a multi-node run shows, and the figures it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredNetwork {
    /// Gbit/s each way between two nodes.
    pub gbit: f64,
    /// The all-reduce the multi-node run's ranks wait for, per iteration.
    pub exposed_ms: f64,
    pub multi_outside_ms: f64,
    /// The planned log's framework time at the multi-node run's samples per thread.
    pub single_outside_ms: f64,
}

/// Why a multi-node run gives no network rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NetworkRateError {
    #[error("the multi-node log holds {0} node(s): give the logs of 2 or more nodes of the same training, or --network-gbps")]
    OneNode(u64),
    #[error("the multi-node run spends {exposed:.1} ms per iteration in its all-reduce (outside oneDNN, beyond the planned log's framework time), no more than the {intra:.1} ms its nodes' own links take: the network did not slow it, so its rate cannot be read; give --network-gbps")]
    NotTheNetwork { exposed: f64, intra: f64 },
    #[error(
        "the samples per thread of the two runs cannot be compared (a zero batch or thread count)"
    )]
    NoScale,
}

/// The network rate of a run over `nodes` × `per_node` ranks (`multi`), from its time outside
/// oneDNN against the planned log's framework time (`single`, its own all-reduce taken out:
/// `logged_allreduce_ms`) scaled to the multi-node run's samples per thread, as
/// [`from_runs`] does on one node. The difference is the all-reduce the ranks wait for; in
/// Gloo's ring ([`allreduce::across_nodes`]) it is the ring bytes at the slower of the nodes'
/// own rate (`intra_gbps`) and the network's, so a difference above the ring at `intra_gbps`
/// is the network's rate, `b · 8 / t`.
pub fn network_from_runs(
    (single, multi): (&Outside, &Outside),
    (nodes, per_node): (u64, u64),
    gradient_bytes: u64,
    intra_gbps: f64,
) -> Result<MeasuredNetwork, NetworkRateError> {
    let (single_ms, exposed_ms) = match exposed(single, multi) {
        _ if nodes < 2 => return Err(NetworkRateError::OneNode(nodes)),
        Some(e) => e,
        None => return Err(NetworkRateError::NoScale),
    };
    // The whole ring's bytes at the nodes' own rate: what the all-reduce takes without the
    // network (as `across_nodes` counts its intra-node part).
    let ring = allreduce::ring_bytes_per_rank(gradient_bytes, per_node.saturating_mul(nodes));
    let intra = match ring {
        Some(b) if per_node > 1 && intra_gbps > 0.0 => b as f64 / (intra_gbps * 1e9) * 1e3,
        _ => 0.0,
    };
    let not = || NetworkRateError::NotTheNetwork {
        exposed: exposed_ms,
        intra,
    };
    if exposed_ms <= intra {
        return Err(not());
    }
    let gbit =
        allreduce::network_gbit_of(gradient_bytes, per_node, nodes, exposed_ms).ok_or_else(not)?;
    Ok(MeasuredNetwork {
        gbit,
        exposed_ms,
        multi_outside_ms: multi.logged_ms,
        single_outside_ms: single_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_rate_by_hand() {
        // The planned log: 2 ranks on one node, 100 ms outside of which 40 ms its own
        // all-reduce; the 2-node × 1-rank run: 380 ms at the same 8 samples per thread. 320 ms
        // of all-reduce for 40 MB a node sends: 40e6 × 8 bit / 0.32 s = 1 Gbit/s.
        let single = Outside {
            logged_allreduce_ms: 40.0,
            ..run(100.0, 8, 1)
        };
        let m = network_from_runs((&single, &run(380.0, 8, 1)), (2, 1), 40_000_000, 0.5).unwrap();
        assert!((m.exposed_ms - 320.0).abs() < 1e-9);
        assert!((m.gbit - 1.0).abs() < 1e-12, "{}", m.gbit);
        // 2 nodes × 2 ranks: 60 MB per rank, 120 ms at 0.5 GB/s inside a node; 90 ms of
        // all-reduce is the nodes' own links, not the network.
        let e =
            network_from_runs((&single, &run(150.0, 8, 1)), (2, 2), 40_000_000, 0.5).unwrap_err();
        assert!(matches!(e, NetworkRateError::NotTheNetwork { .. }), "{e}");
        assert_eq!(
            network_from_runs((&single, &run(380.0, 8, 1)), (1, 1), 40_000_000, 0.5),
            Err(NetworkRateError::OneNode(1))
        );
    }

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
