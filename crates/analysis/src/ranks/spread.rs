//! The ranks of a large run as a distribution: what a person can read at 64 or 1,024 ranks,
//! where a column per rank is a page wide.
//!
//! In synchronous data-parallel training the ranks should do the same work; the spread of
//! their oneDNN time per iteration says whether they do, the spread of their time outside
//! oneDNN how long the fast ones wait for the slow ones in the all-reduce.

use serde::Serialize;

/// A figure over the ranks that have it: its minimum, median, 95th percentile and maximum, and
/// which ranks hold the extremes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Ranks the figure is known for.
    pub ranks: usize,
    pub min: f64,
    /// The lower middle value for an even count (as the straggler is compared with).
    pub median: f64,
    /// Nearest rank: the smallest value at or above which no more than 5 % of the ranks lie.
    pub p95: f64,
    pub max: f64,
    pub min_rank: u32,
    pub max_rank: u32,
}

/// The spread of `values` (rank, figure); `None` without a value.
pub fn spread(values: impl IntoIterator<Item = (u32, f64)>) -> Option<Spread> {
    let mut v: Vec<(u32, f64)> = values.into_iter().collect();
    if v.is_empty() {
        return None;
    }
    // Ties by rank, so that the extremes name the lowest rank of equal figures.
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    let n = v.len();
    let p95 = (n * 95).div_ceil(100).max(1) - 1;
    Some(Spread {
        ranks: n,
        min: v[0].1,
        median: v[(n - 1) / 2].1,
        p95: v[p95].1,
        max: v[n - 1].1,
        min_rank: v[0].0,
        // The lowest rank holding the maximum (sorted by figure, then rank).
        max_rank: v.iter().find(|x| x.1 == v[n - 1].1).map_or(0, |x| x.0),
    })
}

/// The spreads a multi-rank report shows, per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankSpread {
    /// oneDNN time per iteration.
    pub onednn_ms: Option<Spread>,
    /// Wall time per iteration (from timestamps between iteration markers).
    pub wall_ms: Option<Spread>,
    /// Time outside oneDNN per iteration: framework, data loading, waiting for the others.
    pub outside_ms: Option<Spread>,
}

impl RankSpread {
    /// The spreads of each rank's `[oneDNN, wall, outside]` ms per iteration, when known.
    pub fn of(ranks: &[(u32, [Option<f64>; 3])]) -> RankSpread {
        let of = |k: usize| spread(ranks.iter().filter_map(|(r, v)| v[k].map(|v| (*r, v))));
        RankSpread {
            onednn_ms: of(0),
            wall_ms: of(1),
            outside_ms: of(2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_by_hand() {
        // 20 ranks, rank r with figure r + 1, rank 7 with 100: sorted 1..=6, 8..=20, 100.
        let v = (0..20u32).map(|r| (r, if r == 7 { 100.0 } else { f64::from(r + 1) }));
        let s = spread(v).unwrap();
        assert_eq!((s.ranks, s.min, s.min_rank), (20, 1.0, 0));
        // Lower middle of 20: the 10th value, 11 (1..6 are six values, 8..=11 four more).
        assert_eq!(s.median, 11.0);
        // Nearest rank: ceil(0.95 × 20) = 19th value = 20.
        assert_eq!(s.p95, 20.0);
        assert_eq!((s.max, s.max_rank), (100.0, 7));
        let one = spread([(5, 2.5)]).unwrap();
        assert_eq!(
            (one.min, one.median, one.p95, one.max),
            (2.5, 2.5, 2.5, 2.5)
        );
        assert_eq!(spread(std::iter::empty()), None);
        // Equal maxima: the lowest rank is named.
        assert_eq!(spread([(3, 1.0), (9, 2.0), (4, 2.0)]).unwrap().max_rank, 4);
    }
}
