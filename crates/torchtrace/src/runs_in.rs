//! Where a step's time runs: oneDNN, the BLAS, ATen's kernels, Inductor's generated kernels,
//! other framework ops, and Python/dispatch between ops.
//!
//! The question a user asks first ("is oneDNN even the problem?") needs the step split by
//! who executes it, not by op name: an f32 transformer is mostly BLAS and ATen, a compiled one
//! mostly Inductor, a CNN mostly oneDNN. Each class is time per steady iteration; together
//! they are the step's wall time, so the shares add up to 100 %.

use super::TorchJoin;
use serde::Serialize;

/// One class of the step.
#[derive(Debug, Clone, Serialize)]
pub struct RunsIn {
    /// `oneDNN`, `BLAS`, `ATen`, `inductor`, `other ops`, `Python/dispatch`.
    pub class: &'static str,
    pub time_ms: f64,
    /// Of the step's wall time.
    pub share: f64,
}

/// The step of `j` by class, per steady iteration; empty when the trace has no iteration ranges
/// (no wall time to split).
///
/// - `oneDNN`: the primitives the step's ops issued;
/// - `BLAS`: the costed GEMMs that did not call oneDNN;
/// - `ATen`: the other costed ops, less any oneDNN time inside them (under autocast, a GEMM
///   that ran in oneDNN leaves its casts here);
/// - `inductor`: torch.compile's generated kernels;
/// - `other ops`: the rest of the top-level ops' time (ops without a cost model, and the
///   framework's own work around the ops above: autograd, dispatch inside an op);
/// - `Python/dispatch`: the iteration's wall time outside every top-level op (the Python of
///   the training loop, and the dispatcher between ops).
pub fn classes(j: &TorchJoin) -> Vec<RunsIn> {
    let Some(step) = j.steady_step_ms() else {
        return Vec::new();
    };
    let per = j.iterations.unwrap_or(1).max(1) as f64;
    let top = j.phases.iter().fold(0.0, |a, p| a + p.time_ms) / per;
    let onednn = j.phases.iter().fold(0.0, |a, p| a + p.onednn_ms) / per;
    let (mut blas, mut aten) = (0.0, 0.0);
    for r in j.framework.rows.iter().filter(|r| r.costed_calls > 0) {
        let own = (r.time_ms - r.onednn_ms).max(0.0) / per;
        if r.runs_in == "BLAS" {
            blas += own;
        } else {
            aten += own;
        }
    }
    let inductor: f64 = j
        .framework
        .inductor_kernels
        .iter()
        .fold(0.0, |a, k| a + k.time_ms) // from +0.0: an empty `sum` is −0.0
        / per;
    let other = (top - onednn - blas - aten - inductor).max(0.0);
    let between = (step - top).max(0.0);
    let total = onednn + blas + aten + inductor + other + between;
    [
        ("oneDNN", onednn),
        ("BLAS", blas),
        ("ATen", aten),
        ("inductor", inductor),
        ("other ops", other),
        ("Python/dispatch", between),
    ]
    .into_iter()
    .map(|(class, time_ms)| RunsIn {
        class,
        time_ms,
        share: if total > 0.0 { time_ms / total } else { 0.0 },
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::super::framework::{FrameworkOpRow, KernelRow};
    use super::super::{IterationRow, OpRow};
    use super::*;

    /// Two iterations of 10 ms; top-level ops 8 ms a step (16 over both, 2 of them oneDNN).
    /// Costed: a BLAS GEMM of 6 ms (3 a step), an ATen op of 2 ms with 1 ms of oneDNN inside
    /// (0.5 a step of its own); kernels 1 ms (0.5). Other ops 8 − 1 − 3 − 0.5 − 0.5 = 3; the
    /// 2 ms between ops are Python/dispatch.
    #[test]
    fn by_hand() {
        let mut j = TorchJoin {
            iterations: Some(2),
            ..Default::default()
        };
        j.per_iteration = [(0, 10.0), (1, 10.0)]
            .map(|(index, time_ms)| IterationRow {
                index,
                time_ms,
                ..Default::default()
            })
            .to_vec();
        j.phases = vec![
            OpRow {
                name: "forward".into(),
                time_ms: 10.0,
                onednn_ms: 2.0,
                ..Default::default()
            },
            OpRow {
                name: "backward".into(),
                time_ms: 6.0,
                ..Default::default()
            },
        ];
        let costed = |runs_in, time_ms, onednn_ms| FrameworkOpRow {
            runs_in,
            time_ms,
            onednn_ms,
            calls: 1,
            costed_calls: 1,
            ..Default::default()
        };
        j.framework.rows = vec![costed("BLAS", 6.0, 0.0), costed("ATen", 2.0, 1.0)];
        j.framework.inductor_kernels = vec![KernelRow {
            time_ms: 1.0,
            ..Default::default()
        }];
        let c = classes(&j);
        let got: Vec<(&str, f64)> = c.iter().map(|r| (r.class, r.time_ms)).collect();
        assert_eq!(
            got,
            [
                ("oneDNN", 1.0),
                ("BLAS", 3.0),
                ("ATen", 0.5),
                ("inductor", 0.5),
                ("other ops", 3.0),
                ("Python/dispatch", 2.0)
            ]
        );
        assert!((c.iter().map(|r| r.share).sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((c[1].share - 0.3).abs() < 1e-12);
    }
}
