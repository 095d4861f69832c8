//! The model's parameters as the steady iteration's backward saw them: autograd runs one
//! `AccumulateGrad` node per parameter, and its `aten::detach` records the gradient's shape
//! and type. The plan's all-reduce needs the gradient bytes, and a transformer's f32 Linear
//! layers never reach oneDNN, so the oneDNN log alone misses most of them.

use super::step_units::StepUnits;
use profilednn_cost::framework::element_bytes;
use serde_json::Value;

/// The parameters whose gradients the iteration accumulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gradients {
    /// Parameters (one `AccumulateGrad` each).
    pub tensors: u64,
    /// Their gradients' bytes, as recorded (f32 parameters: 4 bytes an element).
    pub bytes: u64,
}

/// Each accumulated gradient's shape and type: an `AccumulateGrad` node's `aten::detach`.
fn accumulated(units: &StepUnits) -> impl Iterator<Item = (&Vec<Value>, &str)> {
    units.units.iter().filter_map(|u| {
        if u.name != "aten::detach" || !u.outermost.ends_with("torch::autograd::AccumulateGrad") {
            return None;
        }
        match (u.dims.first(), u.types.first().and_then(Value::as_str)) {
            (Some(Value::Array(dims)), Some(ty)) => Some((dims, ty)),
            _ => None,
        }
    })
}

/// The shapes of the parameters whose gradients the iteration accumulated, in order: what
/// the whole-step replay's what-ifs take for parameters (the bf16 casts of their gradients,
/// the `--batch` rule), also when the optimizer is not made of ATen ops that show them (a
/// fused optimizer of another library).
pub fn parameter_shapes(units: &StepUnits) -> Vec<Vec<u64>> {
    accumulated(units)
        .filter_map(|(dims, _)| dims.iter().map(Value::as_u64).collect())
        .collect()
}

/// The gradients of `units`' iteration; `None` when it accumulated none (a trace recorded
/// without shapes, or a step without a backward).
pub fn gradients(units: &StepUnits) -> Option<Gradients> {
    let mut g = Gradients::default();
    for (dims, ty) in accumulated(units) {
        let Some(size) = element_bytes(ty) else {
            continue;
        };
        let elements = dims
            .iter()
            .try_fold(1u64, |n, d| n.checked_mul(d.as_u64()?));
        let Some(b) = elements.and_then(|n| n.checked_mul(size)) else {
            continue;
        };
        g.tensors += 1;
        g.bytes = g.bytes.saturating_add(b);
    }
    (g.tensors > 0).then_some(g)
}
