//! Convolution and deconvolution, forward and backward (data, weights): grouped weights get
//! their group dimension, bias is f32 unless the log types it. The two families share their
//! problem descriptor, tensors and C signatures; a deconvolution runs a convolution's data flow
//! backwards, so its right padding follows from the sizes with input and output swapped.

use super::spatial;
use crate::api::{Api, Handle, Status};
use crate::build::{alg, find, i64s, prop, Built};
use profilednn_cost::{ConvProblem, Descriptor, SpatialDim};
use profilednn_model::{Primitive, PropKind};
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

/// What tells the two families apart: names (in skip reasons and the default algorithm) and
/// whether input and output sizes swap roles.
struct Family {
    name: &'static str,
    default_alg: &'static str,
    /// Forward, forward hint, backward data, backward weights.
    steps: [&'static str; 4],
    deconv: bool,
}

const CONVOLUTION: Family = Family {
    name: "convolution",
    default_alg: "convolution_direct",
    steps: [
        "convolution forward",
        "convolution forward hint",
        "convolution backward data",
        "convolution backward weights",
    ],
    deconv: false,
};

const DECONVOLUTION: Family = Family {
    name: "deconvolution",
    default_alg: "deconvolution_direct",
    steps: [
        "deconvolution forward",
        "deconvolution forward hint",
        "deconvolution backward data",
        "deconvolution backward weights",
    ],
    deconv: true,
};

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    rebuild_family(b, p, &CONVOLUTION)
}

pub(crate) fn rebuild_deconvolution(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    rebuild_family(b, p, &DECONVOLUTION)
}

fn rebuild_family(b: &mut Built, p: &Primitive, f: &Family) -> Result<(), SkipReason> {
    let prb =
        ConvProblem::parse(&p.problem, f.deconv).map_err(|e| SkipReason::Problem(e.reason))?;
    let t = tensors(b, p, &prb)?;
    let (src, wei, bia, dst, dst_d) = (t.src, t.wei, t.bia, t.dst, t.dst_dims);
    let (d, engine) = (b.d, b.engine);
    let api = &d.api;
    let a = alg(d, p.algorithm().unwrap_or(f.default_alg))?;
    let dims = data_flow(&prb, f.deconv);
    let (s, dl, pl, pr, _) = spatial(&dims);
    let (fwd, bwd_data, bwd_weights) = creators(api, f.deconv);
    let attr = b.attr(p, &dst_d)?;
    let check = crate::status::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field and the 12-entry arrays
            // outlive the call.
            unsafe {
                fwd(
                    pd,
                    engine,
                    prop,
                    a,
                    src,
                    wei,
                    bia,
                    dst,
                    s.as_ptr(),
                    dl.as_ptr(),
                    pl.as_ptr(),
                    pr.as_ptr(),
                    attr,
                )
            },
            step,
        )
    };
    match p.prop_kind {
        PropKind::ForwardTraining | PropKind::ForwardInference => {
            forward(&mut b.pd, prop(d, &p.prop_kind)?, attr, f.steps[0])
        }
        PropKind::BackwardData | PropKind::BackwardWeights => {
            forward(&mut b.hint, b.fwd_training, null_mut(), f.steps[1])?;
            // SAFETY: as above; the hint was created just before and is owned until drop.
            unsafe {
                if p.prop_kind == PropKind::BackwardData {
                    check(
                        bwd_data(
                            &mut b.pd,
                            engine,
                            a,
                            src,
                            wei,
                            dst,
                            s.as_ptr(),
                            dl.as_ptr(),
                            pl.as_ptr(),
                            pr.as_ptr(),
                            b.hint,
                            attr,
                        ),
                        f.steps[2],
                    )
                } else {
                    check(
                        bwd_weights(
                            &mut b.pd,
                            engine,
                            a,
                            src,
                            wei,
                            bia,
                            dst,
                            s.as_ptr(),
                            dl.as_ptr(),
                            pl.as_ptr(),
                            pr.as_ptr(),
                            b.hint,
                            attr,
                        ),
                        f.steps[3],
                    )
                }
            }
        }
        ref o => Err(SkipReason::PropagationNotReplayed {
            family: f.name,
            prop: o.to_string(),
        }),
    }
}

/// The memory descriptors of a convolution's four tensors, and the destination's dims (its
/// attributes' post-ops need them).
struct Tensors {
    src: Handle,
    wei: Handle,
    bia: Handle,
    dst: Handle,
    dst_dims: Vec<i64>,
}

/// The tensors of `prb` as the log lays them out: grouped weights get their group dimension,
/// bias is f32 unless the log types it, no bias is a null descriptor.
fn tensors(b: &mut Built, p: &Primitive, prb: &ConvProblem) -> Result<Tensors, SkipReason> {
    let grouped = Descriptor::parse(&p.problem).is_some_and(|x| x.has("g"));
    let src_d = i64s(&prb.src_dims());
    let dst_d = i64s(&prb.dst_dims());
    let mut wei_d = if grouped {
        vec![
            prb.g as i64,
            (prb.oc / prb.g) as i64,
            (prb.ic / prb.g) as i64,
        ]
    } else {
        vec![prb.oc as i64, prb.ic as i64]
    };
    wei_d.extend(prb.spatial.iter().map(|s| s.k as i64));
    let dt = b.dt.clone();
    let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
    let wei = b.md(&wei_d, find(p, &["wei", "diff_wei"]), &dt)?;
    let dst = b.md(&dst_d, find(p, &["dst", "diff_dst"]), &dt)?;
    let bia = match find(p, &["bia", "diff_bia"]) {
        Some(m) => b.md(&[prb.oc as i64], Some(m), "f32")?,
        None => null_mut(),
    };
    Ok(Tensors {
        src,
        wei,
        bia,
        dst,
        dst_dims: dst_d,
    })
}

/// The spatial dims as the data flows: a deconvolution runs a convolution backwards, so its
/// input and output sizes swap roles (its right padding follows from them).
fn data_flow(prb: &ConvProblem, deconv: bool) -> Vec<SpatialDim> {
    if deconv {
        let swap = |x: &SpatialDim| SpatialDim {
            i: x.o,
            o: x.i,
            ..*x
        };
        prb.spatial.iter().map(swap).collect()
    } else {
        prb.spatial.clone()
    }
}

/// `dnnl_(de)convolution_forward_primitive_desc_create`'s signature.
type Forward = unsafe extern "C" fn(
    *mut Handle,
    Handle,
    c_int,
    c_int,
    Handle,
    Handle,
    Handle,
    Handle,
    *const i64,
    *const i64,
    *const i64,
    *const i64,
    Handle,
) -> Status;
/// `dnnl_(de)convolution_backward_data_primitive_desc_create`'s signature.
type BackwardData = unsafe extern "C" fn(
    *mut Handle,
    Handle,
    c_int,
    Handle,
    Handle,
    Handle,
    *const i64,
    *const i64,
    *const i64,
    *const i64,
    Handle,
    Handle,
) -> Status;
/// `dnnl_(de)convolution_backward_weights_primitive_desc_create`'s signature.
type BackwardWeights = unsafe extern "C" fn(
    *mut Handle,
    Handle,
    c_int,
    Handle,
    Handle,
    Handle,
    Handle,
    *const i64,
    *const i64,
    *const i64,
    *const i64,
    Handle,
    Handle,
) -> Status;

/// The family's descriptor constructors (forward, backward data, backward weights): the two
/// families share their C signatures, so one builder serves both.
fn creators(api: &Api, deconv: bool) -> (Forward, BackwardData, BackwardWeights) {
    if deconv {
        (
            api.dnnl_deconvolution_forward_primitive_desc_create,
            api.dnnl_deconvolution_backward_data_primitive_desc_create,
            api.dnnl_deconvolution_backward_weights_primitive_desc_create,
        )
    } else {
        (
            api.dnnl_convolution_forward_primitive_desc_create,
            api.dnnl_convolution_backward_data_primitive_desc_create,
            api.dnnl_convolution_backward_weights_primitive_desc_create,
        )
    }
}
