//! `plan --to TARGET`: the splits of a machine not at hand. Nothing can be replayed there, so a
//! split's rank is the log's step projected onto the target at the rank's threads
//! ([`crate::target::project_to`], the method of `project --to`), its work moved to the rank's
//! mini-batch; the all-reduce inside and between nodes is the plan's as on any machine. With
//! `--nodes`, it answers "how many of those machines for this step time" before anyone rents
//! them.

use super::{Plan, Split};
use crate::target::{project_to, Input, Options, TargetProfile, TargetProjection};
use profilednn_machine::MachineProfile;
use serde::Serialize;
use std::collections::BTreeMap;

/// The machine a plan was projected onto, in the plan's JSON (`to`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanTarget {
    /// The target profile's name and file.
    pub name: String,
    pub profile: String,
    /// `measured` or `spec_sheet`.
    pub profile_kind: &'static str,
    /// The profile the log's machine was read from.
    pub source: String,
    /// ± this share of each split's compute and outside (the projection's band at the split's
    /// threads; the widest of the splits), see docs/machines.md "Error band".
    pub band_relative: f64,
    pub band_basis: String,
    /// What the projection had to stand in for or emulate on the target.
    pub emulated: Vec<String>,
}

/// One rank of a split on the target, from a projection at its threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankStep {
    /// oneDNN primitives and costed framework ops: work that grows with the samples.
    pub per_sample_ms: f64,
    /// The rest (uncosted ops, Python, dispatch): per iteration, whatever the batch.
    pub per_iteration_ms: f64,
}

impl RankStep {
    /// The parts of `p` (per iteration of the log, at its batch).
    pub fn of(p: &TargetProjection) -> RankStep {
        let (mut per_sample, mut per_iteration) = (0.0, 0.0);
        for part in &p.parts {
            if part.name == "oneDNN" || part.name.starts_with("framework ops") {
                per_sample += part.projected_ms;
            } else {
                per_iteration += part.projected_ms;
            }
        }
        RankStep {
            per_sample_ms: per_sample,
            per_iteration_ms: per_iteration,
        }
    }

    /// (compute, outside) at mini-batch `batch` of a log at `logged_batch`: the per-sample
    /// work in proportion to the samples (a smaller batch also uses the units less well, which
    /// this does not see: said in the assumptions).
    pub fn at_batch(&self, batch: u64, logged_batch: u64) -> (f64, f64) {
        let k = batch as f64 / logged_batch.max(1) as f64;
        (self.per_sample_ms * k, self.per_iteration_ms)
    }
}

/// Fills every valid split of `plan` (a [`super::skeleton`], not replayed) with its rank's step
/// on `target`, and records the target. `input` and `source` are the log's, as for
/// `project --to`.
pub fn fill(
    plan: &mut Plan,
    input: &Input,
    source: &(MachineProfile, String),
    target: &TargetProfile,
) {
    let mut by_threads: BTreeMap<u64, TargetProjection> = BTreeMap::new();
    for (split, threads, batch) in plan.to_replay() {
        let p = by_threads.entry(threads).or_insert_with(|| {
            let opts = Options {
                threads: Some(threads as usize),
            };
            project_to(input, &source.0, target, &opts)
        });
        let (compute, outside) = RankStep::of(p).at_batch(batch, plan.logged_batch);
        set_projected(plan, split, compute, outside);
    }
    let widest = by_threads
        .values()
        .max_by(|a, b| a.band.relative.total_cmp(&b.band.relative));
    let any = by_threads.values().next();
    plan.to = Some(PlanTarget {
        name: target.profile.name.clone(),
        profile: target.path.clone(),
        profile_kind: target.kind(),
        source: source.1.clone(),
        band_relative: widest.map_or(0.0, |p| p.band.relative),
        band_basis: widest.map_or_else(String::new, |p| p.band.basis.clone()),
        emulated: any.map(|p| p.emulated.clone()).unwrap_or_default(),
    });
    let why = format!(
        "one rank's step on {} = the log's steady step projected there at the rank's threads (`project --to`, docs/machines.md: each part keeps its efficiency against its roofs), then the oneDNN primitives and costed framework ops × the per-rank batch / the logged {} (ASSUMED: work per sample; a smaller batch uses the units less well), the rest (uncosted ops, Python, dispatch) per iteration, unchanged; compute = the oneDNN and framework part, outside = the rest; total = compute + outside + all-reduce, the band stated above on compute and outside",
        target.profile.name, plan.logged_batch
    );
    // What the skeleton (or the whole step) assumed of a replay here and of the outside time
    // does not hold for a projection: those lines give way to this one.
    plan.assumptions.retain(|a| {
        !["one rank's iteration", "compute =", "outside"]
            .iter()
            .any(|p| a.starts_with(p))
    });
    let at = plan.assumptions.len().min(1);
    plan.assumptions.insert(at, why);
}

/// Sets a split's projected compute and outside and completes its total.
fn set_projected(plan: &mut Plan, split: Split, compute_ms: f64, outside_ms: f64) {
    if let Some(r) = plan.rows.iter_mut().find(|r| r.split == split) {
        r.outside_ms = Some(outside_ms);
    }
    plan.set_compute(split, compute_ms);
    plan.replayed = false;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Part;

    fn part(name: &str, ms: f64) -> Part {
        Part {
            name: name.into(),
            logged_ms: ms,
            projected_ms: ms,
        }
    }

    /// Half the samples halve the oneDNN and framework work and leave the rest: by hand,
    /// (40 + 20) / 2 = 30 ms of compute and 15 ms outside.
    #[test]
    fn half_the_batch_halves_the_per_sample_work_only() {
        let s = RankStep {
            per_sample_ms: 60.0,
            per_iteration_ms: 15.0,
        };
        assert_eq!(s.at_batch(4, 8), (30.0, 15.0));
        assert_eq!(s.at_batch(8, 8), (60.0, 15.0));
        let parts = [
            part("oneDNN", 40.0),
            part("framework ops (costed)", 20.0),
            part("rest (uncosted ops, Python, dispatch)", 15.0),
        ];
        let mut p = dummy();
        p.parts = parts.to_vec();
        assert_eq!(RankStep::of(&p), s);
    }

    fn dummy() -> TargetProjection {
        TargetProjection {
            target: "t".into(),
            profile: "t.json".into(),
            profile_kind: "measured",
            threads: 1,
            logged_step_ms: 0.0,
            projected_step_ms: 0.0,
            band: crate::target::band::band(0.0, false, 0),
            ratio: 1.0,
            parts: vec![],
            families: vec![],
            phases: vec![],
            unit_changes: vec![],
            emulated: vec![],
            assumptions: vec![],
            not_modelled: vec![],
            epoch: None,
        }
    }
}
