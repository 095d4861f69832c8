//! What a framework (PyTorch) op costs, from what torch.profiler records with `record_shapes`:
//! each event's `Input Dims` (one list of dimensions per argument, `[]` for a scalar or an
//! absent tensor) and `Input type` (`float`, `c10::BFloat16`, `long int`, `Scalar`, …).
//!
//! On today's PyTorch most of a transformer's step never reaches oneDNN: f32 `nn.Linear` runs in
//! the BLAS, attention in ATen's flash kernel, element-wise ops and the optimizer in ATen. Their
//! cost follows the oneDNN model's conventions (`docs/cost-model.md`): a multiply-add is 2
//! operations, bias and other epilogues are `extra_flops`, `bytes` is each input read once and
//! each output written once at the recorded types. Each formula sits beside its op, one module
//! per op family. An op without a model, or without shapes, is [`Unknown`]: never guessed.
//!
//! ```
//! use profilednn_cost::framework::{cost, OpCall};
//! // `nn.Linear(128, 384)` on a [4, 64, 128] f32 input: M = 256, K = 128, N = 384.
//! let dims = [vec![4, 64, 128], vec![384, 128], vec![384]];
//! let types = ["float", "float", "float"].map(String::from);
//! let c = cost(&OpCall { name: "aten::linear", dims: &dims, types: &types, ..Default::default() }).unwrap();
//! assert_eq!(c.flops, 2 * 256 * 128 * 384);
//! assert_eq!(c.extra_flops, 256 * 384); // the bias
//! ```

mod attention;
mod conv;
mod elementwise;
mod fused;
mod gemm;
mod norm;
mod optimizer;
mod tensor;

use crate::{Cost, Unknown};
pub use fused::fused_per_element;
pub use tensor::element_bytes;

/// One call of an op as the profiler recorded it.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpCall<'a> {
    /// The event's name (`aten::linear`, `aten::_scaled_dot_product_flash_attention_for_cpu`).
    pub name: &'a str,
    /// `Input Dims`: one entry per argument.
    pub dims: &'a [Vec<i64>],
    /// `Input type`: one entry per argument.
    pub types: &'a [String],
    /// A tensor list argument's shapes, one entry per argument (empty for the others, or
    /// altogether when the op has no tensor list): the `_foreach_*` and fused optimizer ops.
    pub lists: &'a [Vec<Vec<i64>>],
    /// `Concrete Inputs`, one per argument, where the trace gives them (`is_causal`).
    pub concrete: &'a [String],
}

/// Where the work of a costed op runs, for the whole-step breakdown: a GEMM goes to the BLAS
/// (MKL) in f32 and to oneDNN under bf16 autocast; a convolution to oneDNN unless it is off
/// for it; everything else named here runs in ATen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Gemm,
    Attention,
    Convolution,
    Normalization,
    Elementwise,
}

/// The cost of one call, or why it has none.
pub fn cost(op: &OpCall) -> Result<Cost, Unknown> {
    let (_, f) = model(op.name)
        .ok_or_else(|| crate::unknown(format!("no cost model for the framework op {}", op.name)))?;
    if op.dims.is_empty() {
        return Err(crate::unknown(format!(
            "{}: no shapes in the trace (record with record_shapes=True: `profilednn record --torch` does)",
            op.name
        )));
    }
    f(op)
}

/// Whether the op's cost reads its `Concrete Inputs` (a convolution's stride and padding,
/// attention's `is_causal`, a fused optimizer's hyper-parameters, a cast's dtype, an embedding
/// gradient's rows, a backward's `output_mask`): the trace reader keeps them for these ops
/// only.
pub fn reads_concrete(name: &str) -> bool {
    let bare = name.strip_prefix("aten::").unwrap_or(name);
    conv::model(bare).is_some()
        || attention::model(bare).is_some()
        || optimizer::model(bare).is_some()
        || matches!(
            bare,
            "_to_copy" | "embedding_dense_backward" | "native_layer_norm_backward"
        )
}

/// The family of an op the model knows.
pub fn family(name: &str) -> Option<Family> {
    model(name).map(|(f, _)| f)
}

type Model = fn(&OpCall) -> Result<Cost, Unknown>;

/// The op families, by the op's name without its `aten::` prefix.
fn model(name: &str) -> Option<(Family, Model)> {
    let bare = name.strip_prefix("aten::").unwrap_or(name);
    if let Some(m) = gemm::model(bare) {
        return Some((Family::Gemm, m));
    }
    if let Some(m) = attention::model(bare) {
        return Some((Family::Attention, m));
    }
    if let Some(m) = conv::model(bare) {
        return Some((Family::Convolution, m));
    }
    if let Some(m) = norm::model(bare) {
        return Some((Family::Normalization, m));
    }
    if let Some(m) = optimizer::model(bare) {
        return Some((Family::Elementwise, m));
    }
    elementwise::model(bare).map(|m| (Family::Elementwise, m))
}

/// Profiler `Input type` strings, for the families' tests.
#[cfg(test)]
fn strings(t: &[&str]) -> Vec<String> {
    t.iter().map(|s| s.to_string()).collect()
}
