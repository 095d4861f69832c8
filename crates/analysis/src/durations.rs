//! The distribution of one primitive's call times, kept in constant memory: median and 90th
//! percentile of identical calls.
//!
//! The mean hides a busy machine: a reorder that took 0.005 ms or 7.5 ms (median 7.48 over 168
//! calls) averages to a figure no call took, and `min`/`max` alone cannot tell one cold call
//! from half the calls slowed down. Logs run to millions of calls, so the times are not kept;
//! each lands in a logarithmic bucket, 16 per doubling, which keeps its calls' count and summed
//! time. A quantile reads its bucket's mean: never further than the bucket's width, 1/16
//! (6.25 %) of its value, and exact when every call in its bucket took the same time.

/// Significant bits of a time that pick its bucket inside its doubling (16 buckets).
const SUB_BITS: u32 = 4;

/// Call times (picoseconds) in logarithmic buckets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durations {
    /// The buckets that hold calls, sorted; a primitive's calls fill a few dozen at most.
    /// Apart from their counts: a call's bucket is searched among 2 bytes per bucket, a cache
    /// line or two, rather than among 24 (the 64 ranks of a labelled log keep MBs of these,
    /// out of cache, and each step of the search waited on memory).
    ids: Vec<u16>,
    /// Per bucket of `ids`: (calls, summed ps).
    sums: Vec<(u64, u64)>,
}

/// The bucket of a time: times below 2^SUB_BITS are their own bucket, larger ones keep their
/// leading SUB_BITS + 1 bits.
fn bucket(t: u64) -> u16 {
    if t < 1 << SUB_BITS {
        return t as u16;
    }
    let top = 63 - t.leading_zeros();
    let shift = top - SUB_BITS;
    let sub = (t >> shift) as u16 & ((1 << SUB_BITS) - 1);
    (((shift + 1) << SUB_BITS) as u16) | sub
}

/// The bucket's bounds `[lo, hi]`, inverse of [`bucket`].
fn bounds(b: u16) -> (u64, u64) {
    let shift = (b >> SUB_BITS) as u32;
    if shift == 0 {
        return (b as u64, b as u64);
    }
    let shift = shift - 1;
    let mantissa = (1u64 << SUB_BITS) | (b as u64 & ((1 << SUB_BITS) - 1));
    let lo = mantissa << shift;
    (lo, lo + ((1u64 << shift) - 1))
}

impl Durations {
    /// Counts one call of `t` picoseconds.
    pub fn add(&mut self, t: u64) {
        self.add_bucket(bucket(t), 1, t);
    }

    fn add_bucket(&mut self, b: u16, n: u64, sum: u64) {
        match self.ids.binary_search(&b) {
            Ok(i) => {
                let (c, s) = &mut self.sums[i];
                *c = c.saturating_add(n);
                *s = s.saturating_add(sum);
            }
            Err(i) => {
                self.ids.insert(i, b);
                self.sums.insert(i, (n, sum));
            }
        }
    }

    /// Reads the memory a call's count will touch, and nothing else: see
    /// [`crate::key_table::SharedKeys::flush`].
    #[inline]
    pub(crate) fn touch(&self) -> u64 {
        let mid = self.sums.get(self.sums.len() / 2).map_or(0, |s| s.0);
        u64::from(self.ids.first().copied().unwrap_or(0)) ^ mid
    }

    /// Adds another primitive's (or chunk's, or rank's) calls.
    pub fn merge(&mut self, o: &Durations) {
        for (&b, &(n, sum)) in o.ids.iter().zip(&o.sums) {
            self.add_bucket(b, n, sum);
        }
    }

    /// Timed calls counted.
    pub fn calls(&self) -> u64 {
        self.sums.iter().map(|(n, _)| n).sum()
    }

    /// The time (ps) below or at which a share `q` (0–1) of the calls ran: the mean of the
    /// nearest-rank call's bucket, kept within the bucket's bounds. `None` without a timed call.
    pub fn quantile_ps(&self, q: f64) -> Option<f64> {
        let n = self.calls();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        let (&b, &(c, sum)) = self.ids.iter().zip(&self.sums).find(|(_, (c, _))| {
            seen += c;
            seen >= rank
        })?;
        let (lo, hi) = bounds(b);
        Some((sum as f64 / c as f64).clamp(lo as f64, hi as f64))
    }

    /// [`Self::quantile_ps`] in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        self.quantile_ps(q).map(|p| p / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_time_once_and_in_order() {
        let mut last = None;
        for t in (0..5000u64).chain([1 << 40, u64::MAX - 1, u64::MAX]) {
            let b = bucket(t);
            let (lo, hi) = bounds(b);
            assert!(lo <= t && t <= hi, "{t} outside bucket {b}: {lo}..={hi}");
            // Width at most 1/16 of the bucket's floor: the midpoint is within 1/32.
            assert!((hi - lo) as f64 <= lo as f64 / 16.0, "{t}: {lo}..={hi}");
            if let Some(l) = last {
                assert!(b >= l);
            }
            last = Some(b);
        }
    }

    #[test]
    fn median_and_p90_of_a_polluted_reorder() {
        // The newcomer's reorder: 60 calls at 0.005 ms (5e6 ps), 108 at 7.48 ms. Nearest rank: the 84th of 168 calls is slow (median 7.48 ms), the
        // 152nd too (p90); the 50th is fast (q = 0.3).
        let mut d = Durations::default();
        for _ in 0..60 {
            d.add(5_000_000);
        }
        for _ in 0..108 {
            d.add(7_480_000_000);
        }
        // Identical calls share a bucket whose mean is their time: exact.
        assert_eq!(d.quantile_ps(0.5), Some(7.48e9));
        assert_eq!(d.quantile_ps(0.9), Some(7.48e9));
        assert_eq!(d.quantile_ps(0.3), Some(5e6));
        assert_eq!(d.calls(), 168);
    }

    #[test]
    fn quantiles_of_spread_times_are_within_a_half_bucket() {
        // 1..=1000 µs: the nearest-rank median is 500 µs, p90 900 µs.
        let mut d = Durations::default();
        for us in 1..=1000u64 {
            d.add(us * 1_000_000);
        }
        for (q, want) in [(0.5, 500e6), (0.9, 900e6)] {
            let got = d.quantile_ps(q).unwrap();
            assert!((got - want).abs() <= want / 16.0, "q {q}: {got} vs {want}");
        }
        // Merging two halves gives the same distribution as adding every call.
        let (mut a, mut b) = (Durations::default(), Durations::default());
        for us in 1..=1000u64 {
            if us % 2 == 0 {
                a.add(us * 1_000_000)
            } else {
                b.add(us * 1_000_000)
            }
        }
        a.merge(&b);
        assert_eq!(a, d);
        assert_eq!(Durations::default().quantile_ps(0.5), None);
    }
}
