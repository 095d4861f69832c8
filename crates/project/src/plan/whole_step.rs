//! The plan of a run recorded with its PyTorch trace (`plan --torch-trace`): each split's rank
//! runs the trace's steady iteration replayed through PyTorch at the split's threads and
//! mini-batch, so the framework ops count — on a transformer in f32 the GEMMs and attention run
//! in PyTorch's BLAS and ATen, and oneDNN sees a few per cent of the step. A split's compute is
//! then the replayed ops' time and its outside the iteration's time between the ops (Python,
//! the autograd engine), carried over as `project`'s whole step does.

use super::Split;
use serde::Serialize;

/// What the whole-step plan replayed, from the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WholeStep {
    /// The trace.
    pub trace: String,
    /// The iteration replayed (`profilednn.iteration#N`) and its wall time in the trace.
    pub iteration: u64,
    pub logged_step_ms: f64,
    /// The batch as the replay reads it from the tensors (an MLP fed rows reads as its rows):
    /// the plan divides it among the ranks.
    pub recorded_batch: u64,
    /// The parameters the iteration accumulated gradients for (the footprint's gradient bytes
    /// are theirs).
    pub gradient_tensors: u64,
    /// The interpreter and PyTorch that replayed the ops (none with `--dry-run`).
    pub torch: Option<String>,
}

impl super::Plan {
    /// Makes the plan a whole-step one: `ws` recorded, and the assumptions about what a split's
    /// compute and outside are (the oneDNN replay's and the scaled outside's) replaced by the
    /// whole step's. Call on a [`super::skeleton`] made without an [`super::Outside`].
    pub fn as_whole_step(&mut self, ws: WholeStep) {
        let replaced = [
            format!(
                "one rank's iteration = the trace's steady iteration ({}, {:.1} ms) with every framework op replayed through PyTorch (`replay --torch-trace`) at the rank's threads and its mini-batch (the recorded batch {} as the tensors give it, divided among the ranks: `--batch`), alone: ranks running at once share caches and memory bandwidth, which a lone replay does not see",
                ws.iteration, ws.logged_step_ms, ws.recorded_batch
            ),
            "compute = the replayed framework ops (oneDNN's primitives among them, as PyTorch calls them; an op that cannot be replayed counts at its logged time); total = compute + outside + all-reduce".into(),
            "outside = the iteration's time between its ops (Python, the autograd engine), carried over unchanged at every split: one Python thread runs it, whatever the rank's threads, and a training loop has no per-sample Python".into(),
            format!(
                "gradients = the {} parameters the trace's backward accumulated (AccumulateGrad), {} bytes",
                ws.gradient_tensors, self.footprint.gradient_bytes
            ),
        ];
        for (i, text) in (1..).zip(replaced) {
            if let Some(a) = self.assumptions.get_mut(i) {
                *a = text;
            }
        }
        self.whole_step = Some(ws);
    }

    /// Sets a row's whole step: the replayed framework ops (`ops_ms`, its compute) and the time
    /// between them (`outside_ms`); completes its total and the relative throughputs.
    pub fn set_step(&mut self, split: Split, ops_ms: f64, outside_ms: f64) {
        if let Some(r) = self.rows.iter_mut().find(|r| r.split == split) {
            r.outside_ms = Some(outside_ms);
        }
        self.set_compute(split, ops_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{skeleton, Footprint, Target};
    use super::*;

    /// A 2-core plan of a batch-8 step: the split's total is its ops, the time between them and
    /// its all-reduce; the faster split gets relative throughput 1.
    #[test]
    fn totals_by_hand() {
        let t = Target {
            cores: 2,
            sockets: 1,
            allreduce_gbps: 0.5,
            allreduce_source: "given".into(),
            nodes: 1,
            network_gbit: None,
            network_source: None,
        };
        let f = Footprint {
            gradient_bytes: 1_000_000,
            ..Default::default()
        };
        let mut p = skeleton("x.log", &t, &[8], f, None).unwrap();
        p.set_step(Split::new(1, 2), 100.0, 20.0);
        p.set_step(Split::new(2, 1), 60.0, 20.0);
        let (a, b) = (&p.rows[0], &p.rows[1]);
        assert_eq!((a.split.name().as_str(), a.total_ms), ("1x2", Some(120.0)));
        // 2 ranks: 2·(2−1)/2 of 1 MB each at 0.5 GB/s = 2 ms.
        assert_eq!(b.allreduce_ms, Some(2.0));
        assert_eq!(b.total_ms, Some(82.0));
        assert_eq!(b.relative_throughput, Some(1.0));
        assert_eq!(a.relative_throughput, Some(82.0 / 120.0));
    }
}
