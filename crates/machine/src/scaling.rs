//! How far an all-core figure should scale over one core, and when it scaled too little to be
//! trusted as a roof.
//!
//! FMA throughput is per core: N threads on N idle physical cores run about N times one core's
//! figure (a little less where the clock drops under load). Threads beyond the physical cores
//! are SMT siblings that share the FMA units, so they add nothing. A figure well below that
//! expectation says the cores were shared while measuring.

/// The speed-up over one core that `threads` threads can reach: one per physical core used
/// (all threads when the core count is unknown).
pub fn expected(threads: usize, physical_cores: Option<u64>) -> usize {
    let cores = physical_cores.map_or(threads, |c| (c as usize).max(1));
    threads.min(cores).max(1)
}

/// The share of the expected speed-up below which the all-core run is suspect: a clock that
/// drops under all-core AVX-512 load costs 10–20 %, not 30 %.
pub const EFFICIENCY: f64 = 0.7;

/// Whether an all-core over one-core `ratio` is too low for `expected` ([`expected`]).
pub fn poor(ratio: f64, expected: usize) -> bool {
    expected > 1 && ratio < EFFICIENCY * expected as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smt_siblings_add_no_expected_speed_up() {
        assert_eq!(expected(2, Some(2)), 2);
        assert_eq!(expected(8, Some(4)), 4);
        assert_eq!(expected(2, Some(1)), 1);
        assert_eq!(expected(4, None), 4);
    }

    #[test]
    fn the_newcomers_two_core_bf16_figure_is_poor() {
        // 1.09x on 2 idle physical cores is 55 % of the expected 2x; 1.8x is 90 %.
        assert!(poor(1.09, 2));
        assert!(!poor(1.8, 2));
        // Two SMT siblings of one core: 1.09x is all there is.
        assert!(!poor(1.09, 1));
    }
}
