//! The batch a step was recorded with, read from its tensors — the rule the replay helper's
//! `BatchPlan` (python/profilednn/replay_ops.py) applies for `--batch`, so that `plan` divides
//! the same batch the replay scales. A trace records shapes, not which dimension is the batch:
//! activations hold it in their outermost dimension in memory, parameters and optimizer state
//! (the shapes the optimizer's ops touch) do not, so the batch is the commonest outermost
//! dimension of the forward ops' other tensors. An MLP fed `[B·T, D]` rows reads as `B·T`.

use super::step_units::{StepUnits, Unit};
use super::Phase;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The element types the replay helper builds tensors of (its `_DTYPES`): the rest are not
/// counted, as there.
const HELPER_DTYPES: &[&str] = &[
    "float",
    "double",
    "c10::BFloat16",
    "c10::Half",
    "long int",
    "int",
    "short int",
    "signed char",
    "unsigned char",
    "bool",
];

/// The recorded batch of `units`' iteration; `None` without a forward tensor, or when it
/// reads as 0 or 1 (it cannot be told apart from other dimensions).
pub fn recorded_batch(units: &StepUnits) -> Option<u64> {
    let params: BTreeSet<Vec<u64>> = units
        .units
        .iter()
        .filter(|u| matches!(u.phase, Phase::Optimizer | Phase::ZeroGrad))
        .flat_map(|u| u.dims.iter().filter_map(shape))
        .filter(|d| !d.is_empty())
        .collect();
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for u in units.units.iter().filter(|u| u.phase == Phase::Forward) {
        for (d, strides) in tensors(u) {
            if !params.contains(&d) {
                *counts
                    .entry(d[outermost(&d, strides.as_deref())])
                    .or_default() += 1;
            }
        }
    }
    // The commonest; among equals the smallest (Python's `max` over the sorted keys keeps the
    // first).
    let (&batch, _) = counts.iter().rev().max_by_key(|&(_, n)| *n)?;
    (batch >= 2).then_some(batch)
}

fn shape(v: &Value) -> Option<Vec<u64>> {
    v.as_array()?.iter().map(Value::as_u64).collect()
}

/// The unit's tensor arguments (a known element type and a non-empty shape), with strides.
fn tensors(u: &Unit) -> impl Iterator<Item = (Vec<u64>, Option<Vec<u64>>)> + '_ {
    u.dims.iter().enumerate().filter_map(|(i, d)| {
        let ty = u.types.get(i).and_then(Value::as_str)?;
        if !HELPER_DTYPES.contains(&ty) {
            return None;
        }
        let d = shape(d).filter(|d| !d.is_empty())?;
        Some((d, u.strides.get(i).and_then(shape)))
    })
}

/// The dimension outermost in memory (size-1 dimensions last; ties to the first).
fn outermost(dims: &[u64], strides: Option<&[u64]>) -> usize {
    match strides {
        Some(st) if st.len() == dims.len() => (0..dims.len())
            .min_by_key(|&k| (dims[k] <= 1, std::cmp::Reverse(st[k]), k))
            .unwrap_or(0),
        _ => 0,
    }
}
