//! The whole training step against the roofline: oneDNN's primitives and the framework's own
//! ops set against the same roofs, and the time lost ranked across both.
//!
//! Neither view alone answers "how far is this step from the hardware": a transformer's f32
//! step is 95 % framework ops, a CNN's mostly primitives. The step's wall time is the
//! denominator; what is in neither costed part (ops without a cost model, Python and dispatch
//! between ops) is shown as the rest, at no roof, so that the efficiency is never flattered by
//! leaving time out.

use super::framework::Roofs;
use super::TorchJoin;
use serde::Serialize;

/// One part of the step, per iteration.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Part {
    /// Measured time of the costed work.
    pub measured_ms: f64,
    /// Its time at the roofs.
    pub roofline_ms: f64,
    /// `None` when the roofs are suspect ([`WholeStep::suspect`]).
    pub lost_ms: Option<f64>,
}

/// One entry of the combined ranking: a unique primitive or a framework op name.
#[derive(Debug, Clone, Serialize)]
pub struct Lost {
    pub name: String,
    /// `oneDNN` for a primitive; the framework op's `runs_in` (`BLAS`, `ATen`) otherwise.
    pub runs_in: String,
    pub lost_ms: f64,
    pub efficiency: f64,
}

/// What the whole step takes of the primitives' roofline of the same log (built from
/// `profilednn_analysis::Efficiency`, which reads the log: this crate sits below it).
pub struct Primitives<'a> {
    /// The roofs the primitives were set against (scaled to the log's threads): the framework
    /// ops are set against the same.
    pub roofs: Roofs<'a>,
    /// The costed primitives' time over the whole log, and at the roofs.
    pub measured_ms: f64,
    pub roofline_ms: f64,
    /// `None` when the roofs are suspect.
    pub lost_ms: Option<f64>,
    /// Each unique primitive with `runs_in` `oneDNN`, its time lost over the whole log.
    pub lost: Vec<Lost>,
}

/// The step against the roofline, per iteration.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WholeStep {
    /// Wall time of a steady iteration (the mean of the trace's iteration ranges that did not
    /// compile), else the top-level ops' time per iteration.
    pub step_ms: f64,
    /// oneDNN's primitives with a cost: the log's, over its iterations (warm-up included, which
    /// the trace's steady step is not).
    pub onednn: Part,
    /// The framework ops with a cost that did not run in oneDNN (those that did are in
    /// `onednn` already, through their primitives).
    pub framework: Part,
    /// `step_ms` less both measured parts: uncosted ops, Python and dispatch between ops.
    pub rest_ms: f64,
    /// Both roofline times over `step_ms`.
    pub efficiency: f64,
    /// Primitives and framework ops together, most time lost first (ten at most); empty when
    /// the roofs are suspect.
    pub lost: Vec<Lost>,
    /// Why the roofs cannot be trusted: the primitives' and the framework ops' suspicions, and
    /// a step whose time at the roofs exceeds its measured time. Non-empty: no time lost.
    pub suspect: Vec<String>,
}

/// The whole step of `j` (framework ops already set against the roofs), with the primitives'
/// roofline `primitives` of the same log. `None` without a roofline for either or without a
/// step time.
pub fn whole_step(j: &TorchJoin, primitives: Option<&Primitives>) -> Option<WholeStep> {
    let framework = j.framework.roofline.as_ref()?;
    let per = j.iterations.unwrap_or(1).max(1) as f64;
    let per_log = j.log_iterations.unwrap_or(1).max(1) as f64;
    let step_ms = j.steady_step_ms().unwrap_or(j.framework.top_level_ms / per);
    if step_ms <= 0.0 {
        return None;
    }
    let none_lost = Part {
        lost_ms: Some(0.0),
        ..Default::default()
    };
    let mut w = WholeStep {
        step_ms,
        onednn: none_lost.clone(),
        framework: none_lost,
        ..Default::default()
    };
    for r in j.framework.rows.iter().filter(|r| r.runs_in != "oneDNN") {
        let Some(roofline) = r.roofline_ms else {
            continue;
        };
        let lost = r.lost_ms.unwrap_or(0.0);
        // Less the oneDNN time inside it (a flash-attention backward's reorders): that time is
        // the primitives' part.
        let share = r.costed_calls as f64 / r.calls.max(1) as f64;
        let measured = (r.time_ms - r.onednn_ms).max(0.0) * share;
        w.framework.measured_ms += measured / per;
        w.framework.roofline_ms += roofline / per;
        *w.framework.lost_ms.get_or_insert(0.0) += lost / per;
        w.lost.push(Lost {
            name: r.name.clone(),
            runs_in: r.runs_in.to_string(),
            lost_ms: lost / per,
            efficiency: r.efficiency.unwrap_or(0.0),
        });
    }
    if let Some(e) = primitives {
        w.onednn = Part {
            measured_ms: e.measured_ms / per_log,
            roofline_ms: e.roofline_ms / per_log,
            lost_ms: e.lost_ms.map(|l| l / per_log),
        };
        w.lost.extend(e.lost.iter().map(|p| Lost {
            lost_ms: p.lost_ms / per_log,
            ..p.clone()
        }));
    }
    w.rest_ms = (step_ms - w.onednn.measured_ms - w.framework.measured_ms).max(0.0);
    w.efficiency = (w.onednn.roofline_ms + w.framework.roofline_ms) / step_ms;
    w.suspect = framework.suspect.clone();
    if w.efficiency > 1.0 {
        w.suspect.push(format!(
            "the step's time at the roofs ({:.3} ms) exceeds its measured time ({:.3} ms): the \
             roofs are too low",
            w.onednn.roofline_ms + w.framework.roofline_ms,
            step_ms
        ));
    }
    if !w.suspect.is_empty() {
        w.onednn.lost_ms = None;
        w.framework.lost_ms = None;
        w.lost.clear();
        return Some(w);
    }
    w.lost
        .sort_by(|a, b| b.lost_ms.total_cmp(&a.lost_ms).then(a.name.cmp(&b.name)));
    w.lost.truncate(10);
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::super::framework::{FrameworkOpRow, FrameworkRoofline};
    use super::super::IterationRow;
    use super::*;

    fn row(name: &str, runs_in: &'static str, time: f64, roof: f64) -> FrameworkOpRow {
        FrameworkOpRow {
            name: name.into(),
            runs_in,
            calls: 2,
            costed_calls: 2,
            time_ms: time,
            roofline_ms: Some(roof),
            lost_ms: Some(time - roof),
            efficiency: Some(roof / time),
            ..Default::default()
        }
    }

    /// Two steady iterations of 10 and 12 ms (and one that compiled, left out): an 11 ms step.
    /// Over the 2 iterations, a BLAS GEMM of 8 ms (2 at the roof) and an ATen add of 4 ms (1)
    /// are 4 + 2 ms a step, 1.5 ms at the roofs; a GEMM that ran in oneDNN is not counted
    /// again. No primitive roofline: the rest is 11 − 6 = 5 ms, the efficiency 1.5 / 11.
    #[test]
    fn framework_ops_by_hand() {
        let mut j = TorchJoin {
            iterations: Some(2),
            ..Default::default()
        };
        j.per_iteration = [(0, 5000.0), (1, 10.0), (2, 12.0)]
            .map(|(index, time_ms)| IterationRow {
                index,
                time_ms,
                ..Default::default()
            })
            .to_vec();
        j.compiling = vec![super::super::compiled::Compiling {
            index: 0,
            start: 0.0,
            end: 1.0,
            compile_ms: 4900.0,
        }];
        j.framework.rows = vec![
            row("aten::mm", "BLAS", 8.0, 2.0),
            row("aten::add", "ATen", 4.0, 1.0),
            row("aten::linear", "oneDNN", 6.0, 3.0),
        ];
        j.framework.roofline = Some(FrameworkRoofline::default());
        let w = whole_step(&j, None).unwrap();
        assert!((w.step_ms - 11.0).abs() < 1e-12);
        assert!((w.framework.measured_ms - 6.0).abs() < 1e-12);
        assert!((w.framework.roofline_ms - 1.5).abs() < 1e-12);
        assert!((w.rest_ms - 5.0).abs() < 1e-12);
        assert!((w.efficiency - 1.5 / 11.0).abs() < 1e-12);
        let names: Vec<&str> = w.lost.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["aten::mm", "aten::add"]);
        assert!((w.lost[0].lost_ms - 3.0).abs() < 1e-12);
        // Without a roofline there is nothing to set the step against.
        j.framework.roofline = None;
        assert!(whole_step(&j, None).is_none());
    }

    /// The same step with a GEMM whose roof says 30 ms of its 8 (a roof too low): 15 + 0.5 ms a
    /// step at the roofs against an 11 ms step. Flagged, and no time lost anywhere; the
    /// framework ops' own suspicion is carried too.
    #[test]
    fn roofs_above_the_step_withhold_the_time_lost() {
        let mut j = TorchJoin {
            iterations: Some(2),
            ..Default::default()
        };
        j.per_iteration = [(1, 10.0), (2, 12.0)]
            .map(|(index, time_ms)| IterationRow {
                index,
                time_ms,
                ..Default::default()
            })
            .to_vec();
        j.framework.rows = vec![
            row("aten::mm", "BLAS", 8.0, 30.0),
            row("aten::add", "ATen", 4.0, 1.0),
        ];
        j.framework.roofline = Some(FrameworkRoofline {
            suspect: vec!["1 compute-bound framework op(s) above 100%".into()],
            ..Default::default()
        });
        let w = whole_step(&j, None).unwrap();
        assert!((w.efficiency - 15.5 / 11.0).abs() < 1e-12);
        assert_eq!(w.suspect.len(), 2, "{:?}", w.suspect);
        assert!(w.suspect[1].starts_with(
            "the step's time at the roofs (15.500 ms) exceeds its measured time (11.000 ms)"
        ));
        assert_eq!((w.onednn.lost_ms, w.framework.lost_ms), (None, None));
        assert!(w.lost.is_empty());
    }
}
