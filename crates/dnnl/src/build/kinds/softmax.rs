//! Softmax (and log-softmax, its algorithm), forward and backward, along the logged axis.

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
    let a = alg(d, p.algorithm().unwrap_or("softmax_accurate"))?;
    let axis: c_int = p
        .aux_value("axis")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let dt = b.dt.clone();
    let src = b.md(&dims, find(p, &["src", "data"]), &dt)?;
    let dst = b.md(&dims, find(p, &["dst"]).or(find(p, &["src", "data"])), &dt)?;
    let attr = b.attr(p, &dims)?;
    let check = crate::status::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field.
            unsafe {
                (api.dnnl_softmax_forward_primitive_desc_create)(
                    pd, engine, prop, a, src, dst, axis, attr,
                )
            },
            step,
        )
    };
    if p.prop_kind.is_forward() {
        return forward(&mut b.pd, prop(d, &p.prop_kind)?, attr, "softmax forward");
    }
    let diff = b.md(
        &dims,
        find(p, &["diff_dst", "diff"]).or(find(p, &["dst"])),
        &dt,
    )?;
    forward(&mut b.hint, b.fwd_training, null_mut(), "softmax hint")?;
    check(
        // SAFETY: as above; the hint was created just before and is owned until drop.
        unsafe {
            (api.dnnl_softmax_backward_primitive_desc_create)(
                &mut b.pd, engine, a, src, diff, dst, axis, b.hint, attr,
            )
        },
        "softmax backward",
    )
}
