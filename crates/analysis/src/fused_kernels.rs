//! Eager ops against the Inductor kernels that took them over (`diff --torch-trace EAGER
//! COMPILED`): not "aten::gelu 7.950 → 0.000", as if fused ops became free, but each kernel's
//! own time beside the eager time of the ops it fused.
//!
//! An op often goes into several kernels (GELU into the forward's and the backward's), and a
//! kernel fuses several ops. Each op's eager time is shared among the kernels that took it over
//! in proportion to their time, so that the kernels' eager shares add up to the fused ops'
//! eager time, and no time is counted twice.

use crate::moved_op::MovedOp;
use profilednn_torchtrace::TorchJoin;
use serde::Serialize;

/// One compiled kernel and the eager ops it took over, per iteration.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FusedKernel {
    pub kernel: String,
    /// The kernel's own time in the compiled run.
    pub kernel_ms: f64,
    /// The eager ops (first run's names) it fused.
    pub ops: Vec<String>,
    /// Their eager time attributed to this kernel (each op's time shared among its kernels in
    /// proportion to the kernels' time).
    pub eager_ms: f64,
}

/// All kernels that took over an eager op, and the totals.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FusedKernels {
    /// The fused ops' eager time per iteration.
    pub eager_ms: f64,
    /// The kernels' time per iteration.
    pub kernel_ms: f64,
    /// Most eager time first.
    pub kernels: Vec<FusedKernel>,
}

/// Groups `moved` (ops of the first run fused into `after`'s kernels) by kernel; `per` is the
/// divisor of `after`'s figures (its steady iterations).
pub fn group(moved: &[MovedOp], after: &TorchJoin, per: f64) -> FusedKernels {
    let kernel_ms = |name: &str| {
        after
            .framework
            .inductor_kernels
            .iter()
            .find(|k| k.name == name)
            .map_or(0.0, |k| k.time_ms / per)
    };
    let mut out: Vec<FusedKernel> = Vec::new();
    for m in moved {
        let total: f64 = m.kernels.iter().map(|k| kernel_ms(k)).sum();
        for k in &m.kernels {
            let ms = kernel_ms(k);
            // Kernels of no recorded time share the op equally.
            let share = if total > 0.0 {
                ms / total
            } else {
                1.0 / m.kernels.len() as f64
            };
            let row = match out.iter().position(|r| &r.kernel == k) {
                Some(i) => &mut out[i],
                None => {
                    out.push(FusedKernel {
                        kernel: k.clone(),
                        kernel_ms: ms,
                        ..Default::default()
                    });
                    out.last_mut().expect("just pushed")
                }
            };
            row.ops.push(m.name.clone());
            row.eager_ms += m.before_ms * share;
        }
    }
    out.sort_by(|a, b| {
        b.eager_ms
            .total_cmp(&a.eager_ms)
            .then(a.kernel.cmp(&b.kernel))
    });
    FusedKernels {
        eager_ms: moved.iter().map(|m| m.before_ms).sum(),
        kernel_ms: out.iter().map(|r| r.kernel_ms).sum(),
        kernels: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_torchtrace::framework::KernelRow;

    fn moved(name: &str, before_ms: f64, kernels: &[&str]) -> MovedOp {
        MovedOp {
            name: name.into(),
            before_ms,
            after_ms: 0.0,
            kernels: kernels.iter().map(|k| k.to_string()).collect(),
        }
    }

    /// Over 2 compiled iterations: kernel A 0.6 ms (0.3 a step), B 0.2 (0.1). gelu (8 ms eager)
    /// went into A and B: 6 ms to A, 2 to B; layer_norm (1 ms) into A only. A: 7 ms of eager
    /// ops against 0.3; B: 2 against 0.1; totals 9 against 0.4.
    /// Rounded to 1e-9 ms: sums of shares are not exact in binary.
    fn r(v: f64) -> f64 {
        (v * 1e9).round() / 1e9
    }

    #[test]
    fn eager_time_shared_among_kernels_by_hand() {
        let mut after = TorchJoin::default();
        after.framework.inductor_kernels = [("A", 0.6), ("B", 0.2)]
            .map(|(name, time_ms)| KernelRow {
                name: name.into(),
                time_ms,
                calls: 2,
                ..Default::default()
            })
            .to_vec();
        let m = [
            moved("aten::gelu", 8.0, &["A", "B"]),
            moved("aten::layer_norm", 1.0, &["A"]),
        ];
        let g = group(&m, &after, 2.0);
        let rows: Vec<(&str, f64, f64, usize)> = g
            .kernels
            .iter()
            .map(|k| {
                (
                    k.kernel.as_str(),
                    r(k.kernel_ms),
                    r(k.eager_ms),
                    k.ops.len(),
                )
            })
            .collect();
        assert_eq!(rows, [("A", 0.3, 7.0, 2), ("B", 0.1, 2.0, 1)]);
        assert_eq!((r(g.eager_ms), r(g.kernel_ms)), (9.0, 0.4));
    }
}
