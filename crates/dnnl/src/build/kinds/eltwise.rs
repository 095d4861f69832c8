//! Element-wise, forward and backward (from the source: `diff_src` and `diff_dst` share the
//! data's dims and layout).

use super::tensor_dims;
use crate::api::Handle;
use crate::build::{alg, find, prop, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let dims = tensor_dims(p)?;
    let (d, engine) = (b.d, b.engine);
    let api = &d.api;
    let a = alg(d, p.algorithm().ok_or(SkipReason::Missing("algorithm"))?)?;
    let num = |k: &str| {
        p.aux_value(k)
            .and_then(|v| v.parse::<f32>().ok())
            .unwrap_or(0.0)
    };
    let dt = b.dt.clone();
    let data = b.md(&dims, find(p, &["data", "src"]), &dt)?;
    let attr = b.attr(p, &dims)?;
    let check = crate::status::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, dst: Handle, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field.
            unsafe {
                (api.dnnl_eltwise_forward_primitive_desc_create)(
                    pd,
                    engine,
                    prop,
                    a,
                    data,
                    dst,
                    num("alpha"),
                    num("beta"),
                    attr,
                )
            },
            step,
        )
    };
    if p.prop_kind.is_forward() {
        let dst = match find(p, &["dst"]) {
            Some(m) => b.md(&dims, Some(m), &dt)?,
            None => data,
        };
        return forward(
            &mut b.pd,
            prop(d, &p.prop_kind)?,
            dst,
            attr,
            "eltwise forward",
        );
    }
    let diff = b.md(&dims, find(p, &["diff", "diff_dst", "diff_src"]), &dt)?;
    forward(
        &mut b.hint,
        b.fwd_training,
        data,
        null_mut(),
        "eltwise hint",
    )?;
    check(
        // SAFETY: as above; the hint was created just before and is owned until drop.
        unsafe {
            (api.dnnl_eltwise_backward_primitive_desc_create)(
                &mut b.pd,
                engine,
                a,
                diff,
                diff,
                data,
                num("alpha"),
                num("beta"),
                b.hint,
                attr,
            )
        },
        "eltwise backward",
    )
}
