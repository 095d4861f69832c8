//! What data parallelism adds per iteration: the all-reduce of the weight gradients.
//!
//! A ring all-reduce of `G` bytes over `R` ranks sends and receives `2(R−1)/R · G` bytes per
//! rank (reduce-scatter, then all-gather). Its time is priced at a per-rank rate ("bus
//! bandwidth": ring bytes per rank / time), which is what a measurement gives directly. The
//! node's memory bandwidth is no price for it: Gloo on one node goes through TCP loopback, and
//! its measured rate on the model-207 Xeon is ~50× below the memory's (see [`DEFAULT_GBPS`]).

/// Default all-reduce rate (GB/s per rank, ring bytes / time) when none is given or measured:
/// Gloo over TCP loopback between 2 single-thread ranks on the model-207 Xeon (2 vCPUs), 30 Nov
/// 2026: `bench/gloo_allreduce.py` gave 0.571 GB/s (44.7 MB in 78.3 ms median, load 8), and the
/// 2-rank ResNet-18 run of `fixtures/multirank/even_2x1.log.gz` against the 1-rank one 0.63
/// GB/s (quiet machine). Measure your node with the script, or give `plan --allreduce-log`.
pub const DEFAULT_GBPS: f64 = 0.6;

/// Bytes one rank sends (and receives) in a ring all-reduce of `gradient_bytes` over `ranks`;
/// `None` when it does not fit 64 bits.
pub fn ring_bytes_per_rank(gradient_bytes: u64, ranks: u64) -> Option<u64> {
    if ranks <= 1 {
        return Some(0);
    }
    let b = 2u128 * u128::from(ranks - 1) * u128::from(gradient_bytes) / u128::from(ranks);
    u64::try_from(b).ok()
}

/// Milliseconds of the all-reduce: a rank's ring bytes at `gbps` GB/s per rank.
pub fn ms(gradient_bytes: u64, ranks: u64, gbps: f64) -> Option<f64> {
    let per_rank = ring_bytes_per_rank(gradient_bytes, ranks)?;
    if gbps <= 0.0 || !gbps.is_finite() {
        return None;
    }
    Some(per_rank as f64 / (gbps * 1e9) * 1e3)
}

/// The rate (GB/s per rank) an all-reduce of `gradient_bytes` over `ranks` ran at when it took
/// `exposed_ms`: the inverse of [`ms`]. `None` for one rank or no time.
pub fn gbps_of(gradient_bytes: u64, ranks: u64, exposed_ms: f64) -> Option<f64> {
    let per_rank = ring_bytes_per_rank(gradient_bytes, ranks)?;
    (per_rank > 0 && exposed_ms > 0.0).then(|| per_rank as f64 / (exposed_ms * 1e-3) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_volume() {
        assert_eq!(ring_bytes_per_rank(1000, 1), Some(0));
        // 2 ranks: each sends half and receives half twice = G.
        assert_eq!(ring_bytes_per_rank(1000, 2), Some(1000));
        // 4 ranks: 2·3/4 G.
        assert_eq!(ring_bytes_per_rank(1000, 4), Some(1500));
        assert_eq!(ring_bytes_per_rank(u64::MAX, 4), None);
    }

    #[test]
    fn priced_at_the_rate() {
        // 2 ranks: 1 GB per rank at 0.5 GB/s = 2000 ms; 4 ranks: 1.5 GB = 3000 ms.
        let t = ms(1_000_000_000, 2, 0.5).unwrap();
        assert!((t - 2000.0).abs() < 1e-9, "{t}");
        let t = ms(1_000_000_000, 4, 0.5).unwrap();
        assert!((t - 3000.0).abs() < 1e-9, "{t}");
        assert_eq!(ms(5, 1, 10.0), Some(0.0));
        assert_eq!(ms(5, 2, 0.0), None);
        // And back.
        let g = gbps_of(1_000_000_000, 2, 2000.0).unwrap();
        assert!((g - 0.5).abs() < 1e-12, "{g}");
        assert_eq!(gbps_of(1000, 1, 5.0), None);
        assert_eq!(gbps_of(1000, 2, 0.0), None);
    }
}
