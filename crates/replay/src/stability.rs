//! When a sequence replay has measured enough, and how sure its figure is.
//!
//! On the 2-vCPU virtual machine this project runs on, one replay of a ResNet-18 iteration
//! (five or six iterations, half a second) projected the same log −5 %, +22 % and +68 % in
//! three runs a minute apart: a neighbour, a frequency change or a descheduled OpenMP thread
//! slows every call for a few hundred milliseconds, and a measurement that short sees one such
//! episode or none. So the replay measures in *blocks* (a few iterations, at least
//! `profilednn_dnnl::sequence::SequenceTiming::block_min_ms`), takes each problem's
//! median within a block, and the median over blocks of those: one slow episode spoils a block,
//! not the figure. It keeps measuring until the blocks agree — the confidence interval of their
//! median is narrow — or the time bound is reached, and reports that interval as the replay's
//! dispersion, so a projection can say ±X % and a check can tell a miss from noise.

/// The median of `v` (the mean of the two middle values for an even count); `NaN` when empty.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The half-width of a distribution-free confidence interval (at least 90 %) of the median of
/// `v`: the order statistics `x(j)` and `x(k+1−j)`, `j` the largest rank with
/// P(Binomial(k, ½) < j) ≤ 5 %, set against the median; the larger side is returned, in the
/// unit of `v`. Distribution-free because block times are skewed (noise only ever adds time).
/// `None` for fewer than 5 values, where no such interval exists.
pub fn half_width(v: &[f64]) -> Option<f64> {
    let k = v.len();
    if k < 5 {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    // P(X < j) for X ~ Binomial(k, 1/2), accumulated term by term in floating point (k is
    // small: the blocks of one replay).
    let mut j = 0;
    let mut below = 0.0; // P(X < j)
    let mut term = 0.5f64.powi(k as i32); // P(X = j)
    while j < k / 2 {
        let next = below + term;
        if next > 0.05 {
            break;
        }
        below = next;
        term *= (k - j) as f64 / (j + 1) as f64;
        j += 1;
    }
    let j = j.max(1);
    let m = median(&s);
    Some((m - s[j - 1]).max(s[k - j] - m))
}

/// [`half_width`] relative to the median (0.05: ±5 %).
pub fn dispersion(v: &[f64]) -> Option<f64> {
    Some(half_width(v)? / median(v).abs())
}

/// The dispersion of a sum of medians, `Σ weight × median(values)`, from each term's
/// [`half_width`]: the half-widths add up (as if every term erred the same way at once, which
/// a slow episode of the machine does), so this bounds the sum's interval from above. `None`
/// when a term has fewer than 5 values.
pub fn dispersion_of_sum<'a>(terms: impl IntoIterator<Item = (f64, &'a [f64])>) -> Option<f64> {
    let (mut width, mut sum) = (0.0, 0.0);
    for (weight, v) in terms {
        width += weight * half_width(v)?;
        sum += weight * median(v);
    }
    (sum > 0.0).then(|| width / sum)
}

/// A projection error set against a bound, given the replay's dispersion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the bound even at the far end of the replay's interval.
    Met,
    /// Outside the bound even at the near end of the interval.
    Missed,
    /// The interval straddles the bound: the replay's noise decides, so measure again.
    Undecided,
}

/// Where `error` (projected / reference − 1) stands against `bound` (both relative, 0.2 =
/// 20 %) when the projection is only known within ±`dispersion` of itself. A check re-measures
/// an undecided one instead of widening the bound; without a dispersion (an isolated replay)
/// the error decides alone.
pub fn verdict(error: f64, dispersion: Option<f64>, bound: f64) -> Verdict {
    // The projection P = R(1 + error) is known within P·d: error within (1 + error)·d.
    let spread = dispersion.unwrap_or(0.0) * (1.0 + error).abs();
    if error.abs() + spread <= bound {
        Verdict::Met
    } else if error.abs() - spread > bound {
        Verdict::Missed
    } else {
        Verdict::Undecided
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_within_the_noise_is_undecided() {
        assert_eq!(verdict(0.05, Some(0.02), 0.10), Verdict::Met);
        assert_eq!(verdict(-0.09, Some(0.02), 0.10), Verdict::Undecided);
        assert_eq!(verdict(0.11, Some(0.02), 0.10), Verdict::Undecided);
        assert_eq!(verdict(0.30, Some(0.02), 0.10), Verdict::Missed);
        // +25 % within ±5 % of the projection: 25 ± 6.25 straddles 20.
        assert_eq!(verdict(0.25, Some(0.05), 0.20), Verdict::Undecided);
        assert_eq!(verdict(0.11, None, 0.10), Verdict::Missed);
        assert_eq!(verdict(0.10, None, 0.10), Verdict::Met);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn five_blocks_use_their_extremes() {
        // k = 5: P(X < 1) = 1/32 ≤ 5 %, P(X < 2) = 6/32 > 5 %: the interval is (min, max).
        let d = dispersion(&[100.0, 98.0, 103.0, 101.0, 99.0]).unwrap();
        assert!((d - 0.03).abs() < 1e-12, "{d}");
    }

    #[test]
    fn more_blocks_trim_the_extremes() {
        // k = 10: P(X < 2) = 11/1024 ≤ 5 %, P(X < 3) = 56/1024 > 5 %: x(2) and x(9).
        let v = [
            50.0, 99.0, 100.0, 100.0, 100.0, 100.0, 100.0, 100.0, 102.0, 200.0,
        ];
        let d = dispersion(&v).unwrap();
        assert!((d - 0.02).abs() < 1e-12, "{d}");
    }

    #[test]
    fn the_dispersion_of_a_sum_weighs_each_term() {
        // 2 × (median 10, ±1) + 1 × (median 20, ±4): ±6 of 40.
        let a = [9.0, 10.0, 10.0, 10.0, 11.0];
        let b = [16.0, 20.0, 20.0, 20.0, 24.0];
        let d = dispersion_of_sum([(2.0, &a[..]), (1.0, &b[..])]).unwrap();
        assert!((d - 0.15).abs() < 1e-12, "{d}");
        assert_eq!(dispersion_of_sum([(1.0, &a[..4])]), None);
    }

    #[test]
    fn too_few_blocks_have_no_interval() {
        assert_eq!(dispersion(&[1.0, 2.0, 3.0, 4.0]), None);
    }
}
