//! How many training iterations a log covers, and the time of each.

use crate::tally::Tally;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IterationMethod {
    /// Given by the user (`--iterations N`).
    User,
    /// Counted from marker lines the training script printed.
    Markers,
    /// The greatest common divisor of the call counts of the compute primitives (convolution,
    /// matmul, inner product, RNN): every one of them runs a whole number of times per step.
    RepeatingPattern,
}

#[derive(Debug, Clone, Serialize)]
pub struct Iterations {
    pub count: u64,
    pub method: IterationMethod,
    /// oneDNN execution time of each iteration, in ms (only with markers: the boundaries
    /// are known). The time before the first marker is `before_first_ms`.
    pub per_iteration_ms: Vec<f64>,
    pub before_first_ms: Option<f64>,
    /// oneDNN time of a last iteration cut by the end of readable data (a truncated log):
    /// not counted in `count` nor in `per_iteration_ms`, nor averaged in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_last_ms: Option<f64>,
}

impl Iterations {
    /// oneDNN time per iteration, of a log with `total_ms` in all: the iterations' own time,
    /// averaged. With markers, the work before the first marker (set-up, a warm-up outside the
    /// loop, a compiled model's first run) and a partial last iteration are in no iteration, so
    /// neither is averaged in. `None` without iterations.
    pub fn mean_ms(&self, total_ms: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let outside = self.before_first_ms.unwrap_or(0.0) + self.partial_last_ms.unwrap_or(0.0);
        Some((total_ms - outside).max(0.0) / self.count as f64)
    }

    /// The log could not be read to its end: its last marked iteration is partial, so it
    /// leaves the count and the per-iteration times (`None` when no whole iteration is left).
    pub fn without_cut_last(mut self) -> Option<Iterations> {
        if self.method != IterationMethod::Markers || self.partial_last_ms.is_some() {
            return Some(self);
        }
        if self.per_iteration_ms.len() < 2 {
            return None;
        }
        self.partial_last_ms = self.per_iteration_ms.pop();
        self.count -= 1;
        Some(self)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The iterations of a log: `user`'s count when given, else from its marker lines, else the
/// greatest common divisor of `compute_calls`, the call counts of its compute-heavy exec
/// entries (convolution, matmul, inner product, RNN).
pub fn detect(
    tally: &Tally,
    compute_calls: impl IntoIterator<Item = u64>,
    user: Option<u64>,
) -> Option<Iterations> {
    if let Some(n) = user.filter(|n| *n > 0) {
        return Some(Iterations {
            count: n,
            method: IterationMethod::User,
            per_iteration_ms: Vec::new(),
            before_first_ms: None,
            partial_last_ms: None,
        });
    }
    // Markers: cumulative exec time at each marker, from chunk totals in chunk order.
    let mut cum: u128 = 0;
    let mut marks: Vec<u128> = Vec::new();
    for c in tally.chunks.values() {
        for m in &c.markers {
            marks.push(cum + m.exec_before_ps);
        }
        cum += c.exec_ps;
    }
    // A marker after the last primitive (a loop that marks the next iteration before it knows
    // there is none, like `profilednn.profile().step()`) opens no iteration.
    if marks.len() > 1 && marks.last() == Some(&cum) {
        marks.pop();
    }
    if !marks.is_empty() {
        let ms = |ps: u128| ps as f64 / 1e9;
        let mut per = Vec::with_capacity(marks.len());
        for (i, m) in marks.iter().enumerate() {
            let end = marks.get(i + 1).copied().unwrap_or(cum);
            per.push(ms(end - m));
        }
        return Some(Iterations {
            count: marks.len() as u64,
            method: IterationMethod::Markers,
            per_iteration_ms: per,
            before_first_ms: Some(ms(marks[0])),
            partial_last_ms: None,
        });
    }
    let g = compute_calls.into_iter().fold(0, gcd);
    (g > 1).then_some(Iterations {
        count: g,
        method: IterationMethod::RepeatingPattern,
        per_iteration_ms: Vec::new(),
        before_first_ms: None,
        partial_last_ms: None,
    })
}

/// How many of a problem's `calls` in a log are warm-up, left out of its logged median: the
/// first third, rounded up (1 of 2 or 3, 2 of 5, 4 of 12); none of a single call. Iterations
/// are left out the same way ([`steady_median`]).
pub fn warm_up_calls(calls: u64) -> u64 {
    if calls < 2 {
        0
    } else {
        calls.div_ceil(3)
    }
}

/// The median over the steady iterations of the ranks' mean time outside oneDNN.
/// `per_rank[r][i]` is rank r's time outside oneDNN in iteration i (`None`: unknown, e.g. the
/// last iteration, which no marker ends). The first iterations are a warm-up (primitive
/// creation, allocations, cold caches) and are left out as `project` leaves out each problem's
/// first calls: the first third, rounded up ([`warm_up_calls`]), at least the
/// first iteration; so is an iteration not known for every rank. Returns the median and the
/// number of iterations it is over; `None` without a steady iteration.
pub fn steady_median(per_rank: &[Vec<Option<f64>>]) -> Option<(f64, usize)> {
    let n = per_rank.iter().map(Vec::len).max()?;
    let warm = warm_up_calls(n as u64).max(1) as usize;
    let mut v: Vec<f64> = (warm..n)
        .filter_map(|i| {
            let xs: Option<Vec<f64>> = per_rank.iter().map(|r| r.get(i).copied()?).collect();
            let xs = xs?;
            (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
        })
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    let median = if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    };
    Some((median, v.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_steady_iterations_by_hand() {
        // Iterations 0 and 1 (the first third of 5, rounded up: warm-up) and the unended last
        // one are left out: the median of 1 and 2.
        let one = vec![vec![Some(100.0), Some(3.0), Some(1.0), Some(2.0), None]];
        assert_eq!(steady_median(&one), Some((1.5, 2)));
        // Three iterations: only the first is warm-up.
        let three = vec![vec![Some(100.0), Some(3.0), Some(1.0)]];
        assert_eq!(steady_median(&three), Some((2.0, 2)));
        // Two ranks, 5 iterations: after the first two, means 4, (iteration 3 unknown for
        // rank 1), 3: median of two = 3.5.
        let two = vec![
            vec![Some(9.0), Some(1.0), Some(5.0), Some(7.0), Some(2.0)],
            vec![Some(9.0), Some(3.0), Some(3.0), None, Some(4.0)],
        ];
        assert_eq!(steady_median(&two), Some((3.5, 2)));
        assert_eq!(steady_median(&[vec![Some(1.0)]]), None);
        assert_eq!(steady_median(&[]), None);
    }
}
