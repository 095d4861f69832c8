//! Convolution, forward and backward (data, weights): grouped weights get their group
//! dimension, bias is f32 unless the log types it.

use super::spatial;
use crate::native::api::Handle;
use crate::native::build::{alg, find, i64s, prop, Built};
use crate::native::SkipReason;
use profilednn_cost::{ConvProblem, Descriptor};
use profilednn_model::{Primitive, PropKind};
use std::ffi::c_int;
use std::ptr::null_mut;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let prb = ConvProblem::parse(&p.problem, false).map_err(|e| SkipReason::Problem(e.reason))?;
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
    let (d, engine) = (b.d, b.engine);
    let api = &d.api;
    let a = alg(d, p.algorithm().unwrap_or("convolution_direct"))?;
    let (s, dl, pl, pr, _) = spatial(&prb.spatial);
    let attr = b.attr(p, &dst_d)?;
    let check = SkipReason::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field and the 12-entry arrays
            // outlive the call.
            unsafe {
                (api.dnnl_convolution_forward_primitive_desc_create)(
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
        PropKind::ForwardTraining | PropKind::ForwardInference => forward(
            &mut b.pd,
            prop(d, &p.prop_kind)?,
            attr,
            "convolution forward",
        ),
        PropKind::BackwardData | PropKind::BackwardWeights => {
            forward(
                &mut b.hint,
                b.fwd_training,
                null_mut(),
                "convolution forward hint",
            )?;
            // SAFETY: as above; the hint was created just before and is owned until drop.
            unsafe {
                if p.prop_kind == PropKind::BackwardData {
                    check(
                        (api.dnnl_convolution_backward_data_primitive_desc_create)(
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
                        "convolution backward data",
                    )
                } else {
                    check(
                        (api.dnnl_convolution_backward_weights_primitive_desc_create)(
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
                        "convolution backward weights",
                    )
                }
            }
        }
        ref o => Err(SkipReason::PropagationNotReplayed {
            family: "convolution",
            prop: o.to_string(),
        }),
    }
}
