//! What a sequence replay ran (`sequence` in the results file), and the thinning that keeps a
//! replay of a very short iteration a small file.

use crate::allocation::{Allocation, Heap};
use serde::{Deserialize, Serialize};

/// How the iteration replayed was chosen, and what it took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SequenceSummary {
    /// How the steady-state iteration was cut out of the log.
    pub iteration_from: String,
    /// Exec calls in that iteration.
    pub calls_per_iteration: usize,
    /// Timed iterations (after warm-up ones).
    pub iterations: u32,
    /// Wall time of the timed iterations, each summed over its calls, ms: every one while
    /// fewer than [`KEPT`], else an even sample of them (every 2ⁿ-th iteration, [`Thinned`]),
    /// so that a replay of a very short iteration stays a small file.
    pub per_iteration_ms: Vec<f64>,
    /// Per block of timed iterations, the iteration's time from that block alone: every
    /// problem's calls per iteration × the median of its calls in the block, ms.
    #[serde(default)]
    pub block_ms: Vec<f64>,
    /// The iteration's time the projection uses: calls per iteration × each problem's median of
    /// its block medians, ms.
    #[serde(default)]
    pub estimate_ms: Option<f64>,
    /// How sure `estimate_ms` is: each problem's ≥ 90 % confidence interval of its median over
    /// blocks, weighted by its calls, relative to the estimate (0.02: ±2 %); `None` with fewer
    /// than 5 blocks ([`crate::stability::dispersion_of_sum`]).
    #[serde(default)]
    pub dispersion: Option<f64>,
    /// Weight reorders of a what-if rebuilt into the layout their convolution chose
    /// (`native/weights_layout.rs`); 0 for a logged iteration.
    #[serde(default)]
    pub weight_reorders_resolved: usize,
    /// How each call's outputs and scratchpad were allocated ([`Allocation`]); `None` in a
    /// results file written before the choice existed (they were allocated once).
    #[serde(default)]
    pub allocation: Option<Allocation>,
    /// Why: given (`--allocation`), or what the log showed.
    #[serde(default)]
    pub allocation_reason: String,
    /// Per-call allocation: where the buffers' pages came from ([`Heap`]); `None` when
    /// everything was allocated once, and in results files written before the choice existed
    /// (the C heap).
    #[serde(default)]
    pub heap: Option<Heap>,
    /// Why: given (`--heap`), or what the log showed (`profilednn_dnnl::heap_choice`).
    #[serde(default)]
    pub heap_reason: String,
    /// With the `as-logged` heap: the replayed problems whose buffers took new pages every call
    /// (empty with any other).
    #[serde(default)]
    pub cold_problems: Vec<String>,
}

/// At most this many figures of a series are kept (the iterations' times, each problem's call
/// times): beyond it the series is thinned evenly ([`Thinned`]). A 10 µs iteration runs about
/// 10⁶ times in the time bound; without this, memory and the replay file grew with it.
pub const KEPT: usize = 1024;

/// A series thinned evenly to fewer than [`KEPT`] figures: every `stride`-th pushed is kept,
/// and the stride doubles (every other figure kept dropped) each time [`KEPT`] is reached.
#[derive(Debug, Clone)]
pub struct Thinned {
    kept: Vec<f64>,
    stride: u64,
    seen: u64,
}

impl Default for Thinned {
    fn default() -> Self {
        Thinned {
            kept: Vec::new(),
            stride: 1,
            seen: 0,
        }
    }
}

impl Thinned {
    pub fn push(&mut self, x: f64) {
        if self.seen.is_multiple_of(self.stride) {
            self.kept.push(x);
            if self.kept.len() >= KEPT {
                let mut k = 0usize;
                self.kept.retain(|_| {
                    k += 1;
                    k % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    /// The figures kept: the `i`-th is the `i × stride`-th pushed.
    pub fn kept(&self) -> &[f64] {
        &self.kept
    }

    /// How many were pushed.
    /// The figures kept, handed over.
    pub fn into_kept(self) -> Vec<f64> {
        self.kept
    }

    pub fn seen(&self) -> u64 {
        self.seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure kept is the `stride`-th of those pushed, fewer than [`KEPT`] and at least
    /// half of them, whatever the count: checked against the arithmetic of the indices.
    #[test]
    fn thinned_series_is_an_even_sample_bounded_by_kept() {
        for n in [0usize, 1, KEPT - 1, KEPT, 3 * KEPT + 7, 1_000_000] {
            let mut t = Thinned::default();
            for i in 0..n {
                t.push(i as f64);
            }
            assert_eq!(t.seen(), n as u64);
            let kept = t.kept();
            assert!(kept.len() < KEPT, "{n}: {} kept", kept.len());
            assert!(
                n < KEPT || kept.len() >= KEPT / 2,
                "{n}: {} kept",
                kept.len()
            );
            // Index j holds figure j × stride: an even sample from the first figure on, with
            // the stride that keeps fewer than KEPT of them.
            let mut stride = 1u64;
            while (n as u64).div_ceil(stride) >= KEPT as u64 {
                stride *= 2;
            }
            assert_eq!(kept.len() as u64, (n as u64).div_ceil(stride), "{n}");
            for (j, &x) in kept.iter().enumerate() {
                assert_eq!(x, (j as u64 * stride) as f64, "{n}: index {j}");
            }
        }
    }
}
