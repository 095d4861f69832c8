//! Inner product, forward and backward (data, weights). The source keeps the spatial
//! dimensions the log prints (the weights get the same), which the cost model folds away.

use crate::api::Handle;
use crate::build::{find, prop, Built};
use profilednn_cost::Descriptor;
use profilednn_model::{Primitive, PropKind};
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let x = Descriptor::parse(&p.problem).ok_or(SkipReason::Unrecognised("inner-product"))?;
    let g = |k: &str| x.get(k).map(|v| v as i64);
    let (mb, ic, oc) = (
        g("mb").ok_or(SkipReason::Missing("mb"))?,
        g("ic").ok_or(SkipReason::Missing("ic"))?,
        g("oc").ok_or(SkipReason::Missing("oc"))?,
    );
    let sp: Vec<i64> = ["id", "ih", "iw"].iter().filter_map(|k| g(k)).collect();
    let mut src_d = vec![mb, ic];
    src_d.extend(&sp);
    let mut wei_d = vec![oc, ic];
    wei_d.extend(&sp);
    let dt = b.dt.clone();
    let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
    let wei = b.md(&wei_d, find(p, &["wei", "diff_wei"]), &dt)?;
    let dst = b.md(&[mb, oc], find(p, &["dst", "diff_dst"]), &dt)?;
    let bia = match find(p, &["bia", "diff_bia"]) {
        Some(m) => b.md(&[oc], Some(m), "f32")?,
        None => null_mut(),
    };
    let attr = b.attr(p, &[mb, oc])?;
    let (d, engine) = (b.d, b.engine);
    let api = &d.api;
    let check = crate::status::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field.
            unsafe {
                (api.dnnl_inner_product_forward_primitive_desc_create)(
                    pd, engine, prop, src, wei, bia, dst, attr,
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
            "inner product forward",
        ),
        PropKind::BackwardData | PropKind::BackwardWeights => {
            forward(
                &mut b.hint,
                b.fwd_training,
                null_mut(),
                "inner product hint",
            )?;
            // SAFETY: as above; the hint was created just before and is owned until drop.
            unsafe {
                if p.prop_kind == PropKind::BackwardData {
                    check(
                        (api.dnnl_inner_product_backward_data_primitive_desc_create)(
                            &mut b.pd, engine, src, wei, dst, b.hint, attr,
                        ),
                        "inner product backward data",
                    )
                } else {
                    check(
                        (api.dnnl_inner_product_backward_weights_primitive_desc_create)(
                            &mut b.pd, engine, src, wei, bia, dst, b.hint, attr,
                        ),
                        "inner product backward weights",
                    )
                }
            }
        }
        ref o => Err(SkipReason::PropagationNotReplayed {
            family: "inner-product",
            prop: o.to_string(),
        }),
    }
}
