//! What data parallelism adds per iteration: the all-reduce of the weight gradients.
//!
//! A ring all-reduce of `G` bytes over `R` ranks sends and receives `2(R−1)/R · G` bytes per
//! rank (reduce-scatter, then all-gather). On one node the ranks exchange through memory, all at
//! once: the `R` ranks together move `2(R−1) · G` bytes through the node's memory system, priced
//! here at its bandwidth. That is a lower bound — Gloo's copies through sockets, the reduction's
//! reads and the synchronisation are not counted — stated as such in the plan.

/// Assumed node memory bandwidth (GB/s) when no machine profile is given: a conservative
/// figure for one socket of a recent server. `profilednn peak` measures the real one.
pub const DEFAULT_GBPS: f64 = 10.0;

/// Bytes one rank sends (and receives) in a ring all-reduce of `gradient_bytes` over `ranks`;
/// `None` when it does not fit 64 bits.
pub fn ring_bytes_per_rank(gradient_bytes: u64, ranks: u64) -> Option<u64> {
    if ranks <= 1 {
        return Some(0);
    }
    let b = 2u128 * u128::from(ranks - 1) * u128::from(gradient_bytes) / u128::from(ranks);
    u64::try_from(b).ok()
}

/// Milliseconds of the all-reduce: every rank's bytes through a memory of `gbps` GB/s.
pub fn ms(gradient_bytes: u64, ranks: u64, gbps: f64) -> Option<f64> {
    let per_rank = ring_bytes_per_rank(gradient_bytes, ranks)?;
    if gbps <= 0.0 {
        return None;
    }
    Some(per_rank as f64 * ranks as f64 / (gbps * 1e9) * 1e3)
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
    fn priced_at_the_bandwidth() {
        // 2 ranks × 1 GB each at 10 GB/s: 200 ms.
        let ms = ms(1_000_000_000, 2, 10.0).unwrap();
        assert!((ms - 200.0).abs() < 1e-9, "{ms}");
        assert_eq!(super::ms(5, 1, 10.0), Some(0.0));
        assert_eq!(super::ms(5, 2, 0.0), None);
    }
}
