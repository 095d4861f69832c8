//! One module per primitive family, as in the cost model (`profilednn_cost`'s `kinds/`): each
//! reads its problem, creates the memory descriptors and attributes through [`Built`], then
//! its primitive descriptor (a backward one from a forward hint). All have one signature,
//! [`Rebuild`]; [`of`] picks the family's.

mod batch_norm;
mod binary;
mod concat;
mod conv;
mod eltwise;
mod group_norm;
mod inner_product;
mod layer_norm;
mod lrn;
mod matmul;
mod pooling;
mod prelu;
mod reduction;
mod reorder;
mod resampling;
mod rnn;
mod shuffle;
mod softmax;
mod sum;

use crate::api::{Handle, Status};
use crate::build::{dims12, i64s, prop, Built};
use profilednn_cost::SpatialDim;
use profilednn_model::{Primitive, PrimitiveKind as K};
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

/// Creates `b.pd` (and `b.hint`) for `p`, or says why it cannot.
pub(crate) type Rebuild = fn(&mut Built, &Primitive) -> Result<(), SkipReason>;

/// The rebuild of a family (`p.kind.family()`), `None` for the kinds not replayed.
pub(crate) fn of(family: &K) -> Option<Rebuild> {
    Some(match family {
        K::Convolution => conv::rebuild,
        K::Deconvolution => conv::rebuild_deconvolution,
        K::InnerProduct => inner_product::rebuild,
        K::Matmul => matmul::rebuild,
        K::Eltwise => eltwise::rebuild,
        K::Binary => binary::rebuild,
        K::BatchNormalization => batch_norm::rebuild,
        K::Pooling => pooling::rebuild,
        K::Softmax => softmax::rebuild,
        K::Reorder => reorder::rebuild,
        K::Sum => sum::rebuild,
        K::LayerNormalization => layer_norm::rebuild,
        K::GroupNormalization => group_norm::rebuild,
        K::Concat => concat::rebuild,
        K::Shuffle => shuffle::rebuild,
        K::Resampling => resampling::rebuild,
        K::Reduction => reduction::rebuild,
        K::Prelu => prelu::rebuild,
        K::Lrn => lrn::rebuild,
        K::Rnn => rnn::rebuild,
        _ => return None,
    })
}

/// Logical dims of the one tensor of an element-wise, normalization, softmax, reorder or sum
/// problem, read as the cost model reads them.
fn tensor_dims(p: &Primitive) -> Result<Vec<i64>, SkipReason> {
    profilednn_cost::tensors::dims(&p.problem)
        .map(|d| crate::build::i64s(&d))
        .map_err(|e| SkipReason::Problem(e.reason))
}

/// Strides, dilations, left padding, right padding (12-entry arrays) and kernel sizes.
type Spatial = ([i64; 12], [i64; 12], [i64; 12], [i64; 12], [i64; 12]);

/// Spatial parameters of a convolution or pooling: strides, dilations, left and right padding
/// (the right padding follows from the sizes, as oneDNN computes it), kernel sizes.
fn spatial(dims: &[SpatialDim]) -> Spatial {
    let mut s = Vec::new();
    let mut dl = Vec::new();
    let mut pl = Vec::new();
    let mut pr = Vec::new();
    let mut k = Vec::new();
    for x in dims {
        let (i, o) = (x.i as i64, x.o as i64);
        let ext = (x.k as i64 - 1) * (x.d as i64 + 1) + 1;
        s.push(x.s as i64);
        dl.push(x.d as i64);
        pl.push(x.p as i64);
        pr.push((o - 1) * x.s as i64 - i + ext - x.p as i64);
        k.push(x.k as i64);
    }
    (
        dims12(&s),
        dims12(&dl),
        dims12(&pl),
        dims12(&pr),
        dims12(&k),
    )
}

/// Normalizations' epsilon: oneDNN's default (the log does not print it; it does not change
/// the work).
const EPSILON: f32 = 1e-5;

/// The normalization flags the log's `flags:` letters stand for, by `letters`.
fn norm_flags(p: &Primitive, letters: &[(char, std::ffi::c_uint)]) -> std::ffi::c_uint {
    let f = p.aux_value("flags").unwrap_or("");
    letters
        .iter()
        .filter(|(c, _)| f.contains(*c))
        .fold(0, |flags, (_, v)| flags | v)
}

/// The step names of a family with a backward pass, as its skip reasons say them: the forward
/// descriptor, the backward's forward hint, the backward descriptor.
type Steps = [&'static str; 3];

/// The forward descriptor of `p` (`forward(pd, prop, attr)` returns oneDNN's status), or for a
/// backward propagation a `forward_training` hint and then the backward descriptor
/// (`backward(pd, hint)`): every family with a backward pass is created this way.
fn forward_or_backward(
    b: &mut Built,
    p: &Primitive,
    attr: Handle,
    steps: Steps,
    forward: impl Fn(&mut Handle, c_int, Handle) -> Status,
    backward: impl FnOnce(&mut Handle, Handle) -> Status,
) -> Result<(), SkipReason> {
    if p.prop_kind.is_forward() {
        let pk = prop(b.d, &p.prop_kind)?;
        return crate::status::check(forward(&mut b.pd, pk, attr), steps[0]);
    }
    crate::status::check(forward(&mut b.hint, b.fwd_training, null_mut()), steps[1])?;
    let hint = b.hint;
    crate::status::check(backward(&mut b.pd, hint), steps[2])
}

/// The first two tensors of a dims-list problem (`2x16x8x8:1x16x1x1`): source and
/// destination of a reduction, data and weights of PReLU.
fn two_tensors(p: &Primitive, kind: &'static str) -> Result<(Vec<i64>, Vec<i64>), SkipReason> {
    match profilednn_cost::parse_dims_list(&p.problem) {
        Some((t, _)) if t.len() >= 2 => Ok((i64s(&t[0]), i64s(&t[1]))),
        _ => Err(SkipReason::Unrecognised(kind)),
    }
}
