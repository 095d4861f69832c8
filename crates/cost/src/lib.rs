//! What a oneDNN primitive costs: floating-point operations and the minimum bytes it must move.
//!
//! ```
//! # use profilednn_verbose::{parse_primitive, Syntax};
//! // An f32 matmul of 64x256 by 256x128, as a oneDNN 3.x log spells it.
//! let p = parse_primitive(
//!     "cpu,matmul,brg:avx512_core,undef,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 \
//!      dst:f32::blocked:ab::f0,,,64x256:256x128",
//!     Syntax { v1_descriptors: true, graph: false },
//!     false,
//! )
//! .unwrap();
//! let c = profilednn_cost::cost(&p).unwrap();
//! assert_eq!(c.flops, 2 * 64 * 256 * 128); // a multiply-add is 2 operations (benchdnn)
//! assert_eq!(c.bytes, (64 * 256 + 256 * 128 + 64 * 128) * 4); // each tensor once, 4-byte f32
//! ```
//!
//! The roofline question ("how far is this primitive from what the machine can do?") needs two
//! numbers per execution that only the log's problem and memory descriptors can give. They are
//! computed here, per primitive kind, in one small module each (`kinds/`).
//!
//! Conventions (documented in `docs/cost-model.md`):
//! * `flops` follows benchdnn exactly for convolution, deconvolution, inner product, matmul and
//!   RNN: a multiply-add is 2 operations for every data type, kernel taps on padding are not
//!   counted, bias and post-ops are not counted, backward directions of a convolution count
//!   the same as forward, RNN counts its matrix multiplies only (backward twice).
//!   For the other kinds benchdnn reports no count; ours is the textbook arithmetic per element,
//!   stated per kind in the docs, and those kinds are memory-bound anyway.
//! * `extra_flops` is the work of bias and post-ops, kept apart so totals can include it.
//! * `bytes` is the minimum traffic: every input read once and every output written once at the
//!   logged data types (padding of blocked layouts, scratchpads and re-reads are not counted).
//! * A kind without a model, or a problem the model cannot read (run-time `*` dimensions, a
//!   descriptor it does not recognise) is [`Unknown`] with the reason, never a guess.
#![forbid(unsafe_code)]

mod count;
mod descriptor;
pub mod framework;
mod kinds;
mod precision;
pub mod tensors;

pub use descriptor::{parse_dims, parse_dims_list, Descriptor};
pub use kinds::conv::{ConvProblem, SpatialDim};
pub use kinds::ip::IpProblem;
pub use kinds::matmul::MatmulProblem;
pub use kinds::pooling::PoolingProblem;
pub use kinds::rnn::RnnProblem;
pub use precision::MathPrecision;

use profilednn_model::{Primitive, PrimitiveKind};
use serde::Serialize;

/// Cost of one execution of a primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Floating-point (or integer) operations, benchdnn's convention where benchdnn has one.
    pub flops: u64,
    /// Operations of bias and post-ops, not included in `flops`.
    pub extra_flops: u64,
    /// Minimum bytes read and written.
    pub bytes: u64,
    /// Which precision the arithmetic runs at: picks the roofline's compute ceiling.
    pub precision: MathPrecision,
}

impl Cost {
    /// Operations per byte (flops only, as in the roofline literature).
    pub fn intensity(&self) -> f64 {
        if self.bytes == 0 {
            0.0
        } else {
            self.flops as f64 / self.bytes as f64
        }
    }
}

/// Why a primitive has no cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unknown {
    pub reason: String,
}

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

pub(crate) fn unknown(reason: impl Into<String>) -> Unknown {
    Unknown {
        reason: reason.into(),
    }
}

/// A problem descriptor without the integer field `field` the cost of its kind needs.
pub fn missing(problem: &str, field: &str) -> Unknown {
    unknown(format!(
        "problem descriptor '{problem}' has no integer '{field}' field"
    ))
}

/// The per-kind result before post-ops are added.
pub(crate) struct KindCost {
    pub flops: count::N,
    /// Bias work (one add per output element that receives a bias).
    pub bias_flops: count::N,
    pub bits: count::N,
    /// Logical destination dimensions, for post-ops (broadcast masks refer to them).
    pub dst_dims: Option<Vec<u64>>,
    pub dst_bits: u32,
}

/// Cost of one execution of `p`.
pub fn cost(p: &Primitive) -> Result<Cost, Unknown> {
    use PrimitiveKind as K;
    let k = match p.kind.family() {
        K::Convolution => kinds::conv::cost(p, false)?,
        K::Deconvolution => kinds::conv::cost(p, true)?,
        K::InnerProduct => kinds::ip::cost(p)?,
        K::Matmul => kinds::matmul::cost(p)?,
        K::Gemm => kinds::matmul::gemm_cost(p)?,
        K::Rnn => kinds::rnn::cost(p)?,
        K::BatchNormalization | K::LayerNormalization | K::GroupNormalization => {
            kinds::norm::cost(p)?
        }
        K::Eltwise => kinds::elementwise::eltwise(p)?,
        K::Binary => kinds::elementwise::binary(p)?,
        K::Sum => kinds::elementwise::sum(p)?,
        K::Prelu => kinds::elementwise::prelu(p)?,
        K::Reorder => kinds::movement::reorder(p)?,
        K::Concat => kinds::movement::concat(p)?,
        K::Shuffle => kinds::movement::shuffle(p)?,
        K::Pooling => kinds::pooling::cost(p)?,
        K::Softmax => kinds::softmax::cost(p)?,
        K::Resampling => kinds::resampling::cost(p)?,
        K::Reduction => kinds::reduction::cost(p)?,
        K::Lrn => kinds::lrn::cost(p)?,
        other => {
            return Err(unknown(format!(
                "no cost model for primitive kind '{}'",
                other.as_str()
            )))
        }
    };
    let (po_flops, po_bits) = kinds::post_ops::cost(p, k.dst_dims.as_deref(), k.dst_bits);
    // A problem too large to count is unknown, never a wrapped number.
    Ok(Cost {
        flops: k.flops.to_u64("the operation count")?,
        extra_flops: (k.bias_flops + po_flops).to_u64("the bias and post-op operation count")?,
        bytes: ((k.bits + po_bits + 7u64) / 8).to_u64("the byte count")?,
        precision: MathPrecision::of(p),
    })
}

/// Logical dimensions of the tensor a primitive produces (conv, deconv, inner product, matmul)
/// or operates on (element-wise kinds, normalizations, softmax, reorder): what lets an analysis
/// see that an eltwise or binary runs on exactly a convolution's output.
pub fn data_dims(p: &Primitive) -> Option<Vec<u64>> {
    use PrimitiveKind as K;
    match p.kind.family() {
        K::Convolution => ConvProblem::parse(&p.problem, false)
            .ok()
            .map(|c| c.dst_dims()),
        K::Deconvolution => ConvProblem::parse(&p.problem, true)
            .ok()
            .map(|c| c.dst_dims()),
        K::InnerProduct => IpProblem::parse(&p.problem).ok().map(|i| vec![i.mb, i.oc]),
        K::Matmul => MatmulProblem::parse(&p.problem).ok().map(|m| m.dst),
        K::GroupNormalization => kinds::tensor_dims_desc(
            p.problem
                .trim_start_matches(|c: char| c == 'g' || c.is_ascii_digit()),
        )
        .ok(),
        _ => tensors::dims(&p.problem).ok(),
    }
}

#[cfg(test)]
mod data_dims_tests {
    use super::*;
    use profilednn_verbose::{parse_primitive, Syntax};

    fn prim(body: &str) -> Primitive {
        let syntax = Syntax {
            v1_descriptors: true,
            graph: false,
        };
        parse_primitive(&format!("cpu,{body}"), syntax, true).unwrap()
    }

    #[test]
    fn producer_and_consumer_dims_line_up() {
        let conv = prim("convolution,jit,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0,,,mb2_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3");
        let relu = prim("eltwise,jit,forward_training,data:f32::blocked:abcd::f0,,alg:eltwise_relu,2x64x112x112");
        let bn = prim("batch_normalization,jit,forward_inference,data:f32::blocked:abcd::f0,,flags:GCH,mb2ic64ih112iw112");
        assert_eq!(data_dims(&conv), Some(vec![2, 64, 112, 112]));
        assert_eq!(data_dims(&relu), data_dims(&conv));
        assert_eq!(data_dims(&bn), data_dims(&conv));
    }
}
