//! The tensors of a recorded call: their dimensions and element sizes.

use super::OpCall;
use crate::count::{product, N};
use crate::{unknown, MathPrecision, Unknown};

/// Bytes of one element of a profiler `Input type`; `None` for non-tensors (`Scalar`,
/// `ScalarList`, `int[]`, an empty string for an absent argument) and unknown types.
pub fn element_bytes(ty: &str) -> Option<u64> {
    Some(match ty {
        "float" => 4,
        "double" => 8,
        "c10::BFloat16" | "c10::Half" | "short int" => 2,
        "long int" | "long" => 8,
        "int" | "unsigned int" => 4,
        "bool" | "unsigned char" | "signed char" | "c10::Float8_e4m3fn" | "c10::Float8_e5m2" => 1,
        _ => return None,
    })
}

/// Argument `i`'s dimensions, each checked to be non-negative.
pub fn dims(op: &OpCall, i: usize) -> Result<Vec<u64>, Unknown> {
    let d = op
        .dims
        .get(i)
        .ok_or_else(|| unknown(format!("{}: argument {i} has no recorded shape", op.name)))?;
    d.iter()
        .map(|&x| {
            u64::try_from(x).map_err(|_| unknown(format!("{}: a negative dimension {x}", op.name)))
        })
        .collect()
}

/// Whether argument `i` is a tensor: a known element type and at least one dimension. The
/// profiler records a scalar argument (`dropout_p`, `is_causal`) with an empty shape, and a
/// 0-dimensional tensor the same way; the latter's one element is left out.
pub fn is_tensor(op: &OpCall, i: usize) -> bool {
    op.types.get(i).is_some_and(|t| element_bytes(t).is_some())
        && op.dims.get(i).is_some_and(|d| !d.is_empty())
}

/// Bytes of argument `i` (0 when it is no tensor).
pub fn bytes(op: &OpCall, i: usize) -> Result<N, Unknown> {
    if !is_tensor(op, i) {
        return Ok(N::ZERO);
    }
    let e = element_bytes(&op.types[i]).unwrap_or(0);
    Ok(product(&dims(op, i)?) * e)
}

/// Bytes of every tensor argument.
pub fn all_bytes(op: &OpCall) -> Result<N, Unknown> {
    (0..op.dims.len()).map(|i| bytes(op, i)).sum()
}

/// The element size of the op's first tensor (what an output like it weighs).
pub fn first_element_bytes(op: &OpCall) -> u64 {
    op.types.iter().find_map(|t| element_bytes(t)).unwrap_or(4)
}

/// The element size of an element-wise op's output: that of its first tensor that is not a
/// mask (`where(condition, self, other)` writes `self`'s type).
pub fn output_element_bytes(op: &OpCall) -> u64 {
    op.types
        .iter()
        .filter(|t| t.as_str() != "bool")
        .find_map(|t| element_bytes(t))
        .unwrap_or_else(|| first_element_bytes(op))
}

/// The arithmetic's precision: that of the first floating-point tensor.
pub fn precision(op: &OpCall) -> MathPrecision {
    for t in op.types {
        match t.as_str() {
            "c10::BFloat16" => return MathPrecision::Bf16,
            "c10::Half" => return MathPrecision::F16,
            "double" => return MathPrecision::F64,
            "float" => return MathPrecision::F32,
            _ => {}
        }
    }
    MathPrecision::F32
}

/// Which of its `n` outputs a backward op computes: its `output_mask` (`[True, False, True]`) at
/// argument `i` of `Concrete Inputs`; every one when the trace gives no such list of exactly
/// `n` flags (a trace without concrete inputs, or with an empty value).
pub fn output_mask(op: &OpCall, i: usize, n: usize) -> Vec<bool> {
    let parsed: Option<Vec<bool>> = op.concrete.get(i).and_then(|s| {
        s.trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .split(',')
            .map(|x| match x.trim() {
                "True" => Some(true),
                "False" => Some(false),
                _ => None,
            })
            .collect()
    });
    match parsed {
        Some(m) if m.len() == n => m,
        _ => vec![true; n],
    }
}

/// A count as a `u64`, naming the op when it does not fit.
pub fn count(op: &OpCall, n: N, what: &str) -> Result<u64, Unknown> {
    n.to_u64(&format!("{} {what}", op.name))
}

/// The cost of `flops` operations that read every tensor argument once and write `written`
/// bytes (no extra operations).
pub fn written(op: &OpCall, flops: N, written: N) -> Result<crate::Cost, Unknown> {
    Ok(crate::Cost {
        flops: count(op, flops, "flops")?,
        extra_flops: 0,
        bytes: count(op, all_bytes(op)? + written, "bytes")?,
        precision: precision(op),
    })
}
