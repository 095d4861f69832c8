//! A logged primitive rebuilt through the C API: memory descriptors from the logged types,
//! tags and strides (`memory`), attributes and post-ops (`attr`), then the primitive
//! descriptor of its kind and direction, one module per family in `kinds`.

mod attr;
pub mod chosen_layouts;
pub(crate) mod kinds;
mod memory;
mod quant;

pub(crate) use quant::Quant;

use crate::api::{arg, Dnnl, Handle};
use chosen_layouts::ChosenLayouts;
use profilednn_model::{DataType, Primitive, PrimitiveKind as K, PropKind};
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

/// Everything created for one primitive descriptor, released on drop; and what the family
/// modules need to create it (the library, the engine, the primitive's data type).
pub struct Built<'a> {
    pub(crate) d: &'a Dnnl,
    pub(crate) engine: Handle,
    pub pd: Handle,
    /// The forward descriptor a backward one is created from.
    pub(crate) hint: Handle,
    mds: Vec<Handle>,
    /// The primitive's attributes (user scratchpad, scales, zero-points, post-ops), null until
    /// `attr` creates them.
    pub(crate) attr: Handle,
    post_ops: Handle,
    /// Logged layout tags this oneDNN does not know (replaced by `any`).
    pub(crate) unknown_tags: Vec<String>,
    /// Descriptors of layouts this oneDNN chose but cannot name, taken for those tags.
    layouts: &'a ChosenLayouts<'a>,
    /// Only convolution, deconvolution, inner product, matmul and RNN accept `any` layouts;
    /// the other kinds get
    /// the layout the log printed even where the framework had asked for `any`.
    allow_any: bool,
    /// Arguments the descriptor reports but the primitive must not receive (oneDNN counts
    /// inputs: backward normalizations report SHIFT without taking it).
    pub skip_args: Vec<c_int>,
    /// The first data type the log lists: the type of tensors it does not describe.
    pub(crate) dt: String,
    /// `forward_training` in this library, the propagation of every backward hint.
    pub(crate) fwd_training: c_int,
    /// The scales and zero-points the attributes ask for, allocated by the run.
    pub(crate) quant: Vec<Quant>,
}

impl Drop for Built<'_> {
    fn drop(&mut self) {
        let a = &self.d.api;
        // SAFETY: each handle was created by the library and is released once.
        unsafe {
            if !self.pd.is_null() {
                (a.dnnl_primitive_desc_destroy)(self.pd);
            }
            if !self.hint.is_null() {
                (a.dnnl_primitive_desc_destroy)(self.hint);
            }
            for m in &self.mds {
                (a.dnnl_memory_desc_destroy)(*m);
            }
            if !self.attr.is_null() {
                (a.dnnl_primitive_attr_destroy)(self.attr);
            }
            if !self.post_ops.is_null() {
                (a.dnnl_post_ops_destroy)(self.post_ops);
            }
        }
    }
}

pub(crate) fn dims12(v: &[i64]) -> [i64; 12] {
    let mut d = [0i64; 12];
    d[..v.len()].copy_from_slice(v);
    d
}

/// Sizes of the cost model (`u64`) as the C API takes them.
pub(crate) fn i64s(v: &[u64]) -> Vec<i64> {
    v.iter().map(|x| *x as i64).collect()
}

/// The first present descriptor whose argument is one of `names`.
pub(crate) use profilednn_cost::tensors::find;

fn data_dt(p: &Primitive) -> String {
    p.mds
        .iter()
        .find(|m| !m.is_absent() && !m.data_type.is_undef())
        .map(|m| m.data_type.to_string())
        .unwrap_or_else(|| "f32".into())
}

/// The propagation kind's value in this library.
pub(crate) fn prop(d: &Dnnl, p: &PropKind) -> Result<c_int, SkipReason> {
    d.props
        .get(p.as_str())
        .copied()
        .ok_or_else(|| SkipReason::UnknownPropagation(p.to_string()))
}

/// The algorithm's value in this library.
pub(crate) fn alg(d: &Dnnl, name: &str) -> Result<c_int, SkipReason> {
    d.algs
        .get(name)
        .copied()
        .ok_or_else(|| SkipReason::UnknownAlgorithm(name.to_string()))
}

/// The value in this library of the algorithm the log names for `p` (`alg:…`).
pub(crate) fn logged_alg(d: &Dnnl, p: &Primitive) -> Result<c_int, SkipReason> {
    alg(d, p.algorithm().ok_or(SkipReason::Missing("algorithm"))?)
}

/// Builds the primitive descriptor for `p`; `Err` says why it cannot be rebuilt. A logged tag
/// this library cannot name is taken from `layouts` when a primitive of the log chose it.
pub(crate) fn build<'a>(
    d: &'a Dnnl,
    engine: Handle,
    p: &Primitive,
    layouts: &'a ChosenLayouts<'a>,
) -> Result<Built<'a>, SkipReason> {
    let fwd_training = *d
        .props
        .get("forward_training")
        .ok_or(SkipReason::NoForwardTraining)?;
    let family = p.kind.family();
    let mut b = Built {
        d,
        engine,
        pd: null_mut(),
        hint: null_mut(),
        mds: Vec::new(),
        attr: null_mut(),
        post_ops: null_mut(),
        unknown_tags: Vec::new(),
        layouts,
        allow_any: matches!(
            family,
            K::Convolution | K::Deconvolution | K::InnerProduct | K::Matmul | K::Rnn
        ),
        skip_args: Vec::new(),
        dt: data_dt(p),
        fwd_training,
        quant: Vec::new(),
    };
    if p.prop_kind.is_backward() {
        b.skip_args.push(arg::SHIFT);
    }
    let rebuild =
        kinds::of(&family).ok_or_else(|| SkipReason::KindNotReplayed(family.to_string()))?;
    rebuild(&mut b, p).map_err(|e| {
        let bf16 = p.mds.iter().any(|m| m.data_type == DataType::Bf16);
        crate::status::on_this_cpu(e, d.isa, bf16)
    })?;
    Ok(b)
}
