//! Two runs' PyTorch views side by side (`diff --torch-trace`): each phase and each framework op
//! per iteration, before and after. Computed once here; the terminal and HTML renderers only
//! lay it out.

use crate::torch_trace::{OpRow, TorchJoin};
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
    pub phase: String,
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
}

fn per_iteration(j: &TorchJoin) -> f64 {
    j.iterations.map_or(1.0, |i| i as f64)
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
    let op_ms = |v: &[OpRow], phase: &str, name: &str, per: f64| {
        v.iter()
            .find(|o| o.phase == phase && o.name == name)
            .map_or(0.0, |o| o.time_ms / per)
    };
    let mut ops: Vec<OpChange> = Vec::new();
    for r in before.ops.iter().chain(&after.ops) {
        if ops.iter().any(|c| c.phase == r.phase && c.name == r.name) {
            continue;
        }
        ops.push(OpChange {
            phase: r.phase.clone(),
            name: r.name.clone(),
            before_ms: op_ms(&before.ops, &r.phase, &r.name, pb),
            after_ms: op_ms(&after.ops, &r.phase, &r.name, pa),
        });
    }
    // Stable: equal changes keep the order first seen.
    ops.sort_by(|p, q| {
        (q.after_ms - q.before_ms)
            .abs()
            .total_cmp(&(p.after_ms - p.before_ms).abs())
    });
    TorchComparison { phases, ops }
}
