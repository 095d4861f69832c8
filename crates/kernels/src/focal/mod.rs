//! Sigmoid focal loss (Lin et al.), torchvision's semantics: forward with reduction none/mean/sum,
//! backward, and a fused forward-and-backward that reads logits and targets once and writes
//! the gradient (what a training step needs).

#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod elem;
mod kernel;
mod table;

pub use kernel::{backward, forward, forward_backward};

/// The code path the reduced passes (`forward_backward`, reduced `forward`/`backward`) take
/// for f32 or bf16 logits with this γ on `isa`: benchmarks print it beside their figures, so
/// that numbers from different machines or paths are not mixed up.
pub fn path(isa: crate::Isa, bf16: bool, gamma: f32) -> String {
    #[cfg(target_arch = "x86_64")]
    if let Some(proof) = avx512::applies(isa, elem::gamma_mode(gamma)) {
        return if bf16 {
            format!(
                "avx512 intrinsics, all-zero-target chunks by table lookup ({}), {}, bf16 gradient by {}",
                avx512::lookup_form(),
                avx512::target_prefetch_form(),
                avx512::bf16_rounding(proof)
            )
        } else {
            format!("avx512 intrinsics, {}", avx512::f32_prefetch_form())
        };
    }
    let table = if table::t0_table_exists(elem::gamma_mode(gamma)) {
        "all-zero-target chunks by table lookup, "
    } else {
        ""
    };
    format!(
        "{} auto-vectorized{}",
        isa.name(),
        if bf16 {
            format!(", {table}bf16 gradient by integer round-to-nearest-even")
        } else {
            String::new()
        }
    )
}

/// Where the logits are: f32, or bf16 bits.
#[derive(Clone, Copy)]
pub enum Tensor<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
}

impl Tensor<'_> {
    pub fn len(&self) -> usize {
        match self {
            Tensor::F32(v) => v.len(),
            Tensor::Bf16(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tensor the kernel writes, in the logits' type.
pub enum TensorMut<'a> {
    F32(&'a mut [f32]),
    Bf16(&'a mut [u16]),
}

impl TensorMut<'_> {
    pub fn len(&self) -> usize {
        match self {
            TensorMut::F32(v) => v.len(),
            TensorMut::Bf16(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Targets: dense (same shape as the logits, values in [0, 1]), or one class per row of
/// `classes` logits. A label equal to `ignore_index` ignores the row (no loss, no gradient, not
/// counted by `mean`); any other label outside `0..classes` is background (all-zero target).
#[derive(Clone, Copy)]
pub enum Targets<'a> {
    Dense(Tensor<'a>),
    Classes {
        labels: &'a [i64],
        classes: usize,
        ignore_index: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    None,
    Mean,
    Sum,
}

#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Weight of the positive class; negative: no weighting.
    pub alpha: f32,
    /// Focusing parameter, ≥ 0.
    pub gamma: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            alpha: 0.25,
            gamma: 2.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FocalError {
    Shape(String),
    Gamma(f32),
}

impl std::fmt::Display for FocalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FocalError::Shape(s) => f.write_str(s),
            FocalError::Gamma(g) => write!(f, "gamma must be >= 0, got {g}"),
        }
    }
}

impl std::error::Error for FocalError {}
