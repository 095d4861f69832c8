//! Two runs' PyTorch views side by side (`diff --torch-trace`): each phase and each framework op
//! per iteration, before and after. Computed once here; the terminal and HTML renderers only
//! lay it out.

pub use crate::moved_op::MovedOp;
use profilednn_torchtrace::{OpRow, Phase, TorchJoin};
use serde::Serialize;

/// A phase's figures per iteration in both runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PhaseChange {
    pub name: String,
    pub before: PhaseTimes,
    pub after: PhaseTimes,
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PhaseTimes {
    pub time_ms: f64,
    pub onednn_ms: f64,
    pub outside_ms: f64,
}

/// A top-level framework op's time per iteration in both runs (0 where it did not run).
#[derive(Debug, Clone, Default, Serialize)]
pub struct OpChange {
    #[serde(serialize_with = "profilednn_torchtrace::phase_or_empty")]
    pub phase: Option<Phase>,
    pub name: String,
    pub before_ms: f64,
    pub after_ms: f64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct TorchComparison {
    /// Phases in the order first seen (before's, then after's new ones).
    pub phases: Vec<PhaseChange>,
    /// Every op of either run, the largest change (either way) first.
    pub ops: Vec<OpChange>,
    /// The first run's ops that the second run's Inductor kernels fused, most time first.
    pub moved: Vec<MovedOp>,
    /// The same ops by the kernel that took them over, with the kernels' own time.
    pub fused: crate::fused_kernels::FusedKernels,
    /// The second run's compile warm-up, when it compiled.
    pub warm_up: Option<crate::compile_cost::WarmUp>,
    /// Its compile time against the steady saving over the first run.
    pub payback: Option<crate::compile_cost::Payback>,
    /// Whether each run (before, after) was profiled with Python stacks (`python_function`
    /// events): their overhead slows a profiled step, so two runs profiled differently are not
    /// like with like (an eager run's default against a compiled run recorded without them).
    pub python_stacks: [bool; 2],
}

/// An op's name as a fused kernel's name spells it: `aten::native_layer_norm`, `aten::layer_norm`
/// and `aten::add_` all compare as `layer_norm` and `add`.
fn kernel_spelling(name: &str) -> &str {
    let n = name.strip_prefix("aten::").unwrap_or(name);
    let n = n.trim_start_matches('_');
    let n = n.strip_prefix("native_").unwrap_or(n);
    n.strip_suffix('_').unwrap_or(n)
}

/// Which of `before`'s framework ops `after`'s Inductor kernels fused (see [`MovedOp`]).
fn moved(before: &TorchJoin, after: &TorchJoin, pb: f64, pa: f64) -> Vec<MovedOp> {
    let kernels = &after.framework.inductor_kernels;
    if kernels.is_empty() {
        return Vec::new();
    }
    let after_ms = |name: &str| {
        after
            .framework
            .rows
            .iter()
            .find(|r| r.name == name)
            .map_or(0.0, |r| r.time_ms / pa)
    };
    let mut out: Vec<MovedOp> = Vec::new();
    for r in &before.framework.rows {
        let op = kernel_spelling(&r.name);
        if op.is_empty() || !r.name.starts_with("aten::") {
            continue;
        }
        let into: Vec<String> = kernels
            .iter()
            .filter(|k| k.fused.iter().any(|f| kernel_spelling(f) == op))
            .map(|k| k.name.clone())
            .collect();
        let (before_ms, after_ms) = (r.time_ms / pb, after_ms(&r.name));
        // A kernel that fuses an `add` does not make every `add` moved: the optimizer's
        // `add_` outside the compiled model still runs eagerly. Most of its time must be gone.
        if into.is_empty() || after_ms > 0.5 * before_ms {
            continue;
        }
        out.push(MovedOp {
            name: r.name.clone(),
            before_ms,
            after_ms,
            kernels: into,
        });
    }
    out.sort_by(|a, b| {
        b.before_ms
            .total_cmp(&a.before_ms)
            .then(a.name.cmp(&b.name))
    });
    out
}

fn per_iteration(j: &TorchJoin) -> f64 {
    j.iterations.map_or(1.0, |i| i.max(1) as f64)
}

/// An op's name for matching across runs: a compiled region without the frame it runs
/// (`Torch-Compiled Region: 0/0 GPT.forward (train.py:80)` → `Torch-Compiled Region: 0/0`), whose
/// line number moves with any edit of the script.
fn bare(name: &str) -> &str {
    const REGION: &str = "Torch-Compiled Region: ";
    match name.strip_prefix(REGION).and_then(|rest| rest.find(' ')) {
        Some(k) => &name[..REGION.len() + k],
        None => name,
    }
}

pub fn compare(before: &TorchJoin, after: &TorchJoin) -> TorchComparison {
    let (pb, pa) = (per_iteration(before), per_iteration(after));
    let times = |v: &[OpRow], name: &str, per: f64| {
        v.iter()
            .find(|r| r.name == name)
            .map_or_else(PhaseTimes::default, |r| PhaseTimes {
                time_ms: r.time_ms / per,
                onednn_ms: r.onednn_ms / per,
                outside_ms: r.outside_ms / per,
            })
    };
    let mut phases: Vec<PhaseChange> = Vec::new();
    for r in before.phases.iter().chain(&after.phases) {
        if phases.iter().all(|p| p.name != r.name) {
            phases.push(PhaseChange {
                name: r.name.clone(),
                before: times(&before.phases, &r.name, pb),
                after: times(&after.phases, &r.name, pa),
            });
        }
    }
    let op_ms = |v: &[OpRow], phase: Option<Phase>, name: &str, per: f64| {
        v.iter()
            .find(|o| o.phase == phase && bare(&o.name) == name)
            .map_or(0.0, |o| o.time_ms / per)
    };
    let mut ops: Vec<OpChange> = Vec::new();
    for r in before.ops.iter().chain(&after.ops) {
        let name = bare(&r.name);
        if ops.iter().any(|c| c.phase == r.phase && c.name == name) {
            continue;
        }
        ops.push(OpChange {
            phase: r.phase,
            name: name.to_string(),
            before_ms: op_ms(&before.ops, r.phase, name, pb),
            after_ms: op_ms(&after.ops, r.phase, name, pa),
        });
    }
    // Stable: equal changes keep the order first seen.
    ops.sort_by(|p, q| {
        (q.after_ms - q.before_ms)
            .abs()
            .total_cmp(&(p.after_ms - p.before_ms).abs())
    });
    let moved = moved(before, after, pb, pa);
    TorchComparison {
        phases,
        ops,
        fused: crate::fused_kernels::group(&moved, after, pa),
        moved,
        warm_up: crate::compile_cost::warm_up(after),
        payback: crate::compile_cost::payback(before, after),
        python_stacks: [before.python_events > 0, after.python_events > 0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_torchtrace::framework::{FrameworkOpRow, KernelRow};

    fn row(name: &str, time_ms: f64) -> FrameworkOpRow {
        FrameworkOpRow {
            name: name.into(),
            time_ms,
            ..Default::default()
        }
    }

    /// Eager (2 iterations): gelu 4 ms, layer_norm 2 ms, mm 6 ms, add_ 1 ms. Compiled
    /// (1 iteration): mm still 3 ms, one kernel fusing gelu and native_layer_norm, one fusing
    /// add and mul. gelu, layer_norm (as native_layer_norm) and add_ moved; mm did not, nor
    /// mul_, which still runs eagerly (the optimizer's) as long as before.
    #[test]
    fn eager_ops_found_in_the_compiled_kernels() {
        let mut eager = TorchJoin {
            iterations: Some(2),
            ..Default::default()
        };
        eager.framework.rows = vec![
            row("aten::mm", 6.0),
            row("aten::gelu", 4.0),
            row("aten::layer_norm", 2.0),
            row("aten::add_", 1.0),
            row("aten::mul_", 2.0),
        ];
        let mut compiled = TorchJoin {
            iterations: Some(1),
            ..Default::default()
        };
        compiled.framework.rows = vec![row("aten::mm", 3.0), row("aten::mul_", 1.0)];
        let kernel = |name: &str, fused: &[&str], time_ms| KernelRow {
            name: name.into(),
            fused: fused.iter().map(|f| f.to_string()).collect(),
            time_ms,
            calls: 1,
            graph: Some(0),
            ..Default::default()
        };
        compiled.framework.inductor_kernels = vec![
            kernel(
                "graph_0_cpp_fused_gelu_native_layer_norm_0",
                &["gelu", "native_layer_norm"],
                2.0,
            ),
            kernel("graph_0_cpp_fused_add_1", &["add"], 0.5),
            kernel("graph_0_cpp_fused_mul_2", &["mul"], 0.5),
        ];
        let c = compare(&eager, &compiled);
        let got: Vec<(&str, f64, f64, usize)> = c
            .moved
            .iter()
            .map(|m| (m.name.as_str(), m.before_ms, m.after_ms, m.kernels.len()))
            .collect();
        assert_eq!(
            got,
            [
                ("aten::gelu", 2.0, 0.0, 1),
                ("aten::layer_norm", 1.0, 0.0, 1),
                ("aten::add_", 0.5, 0.0, 1)
            ]
        );
        assert_eq!(c.moved[2].kernels, ["graph_0_cpp_fused_add_1"]);
        assert_eq!(
            bare("Torch-Compiled Region: 0/0 GPT.forward (t.py:80)"),
            "Torch-Compiled Region: 0/0"
        );
        assert_eq!(bare("aten::mm"), "aten::mm");
        // Nothing moves into a run without kernels.
        assert!(compare(&compiled, &eager).moved.is_empty());
    }
}
