//! Batch normalization, forward and backward; flags from the log's letters (`G` global
//! stats, `C` scale, `H` shift, `S` both as 2.x printed it, `R` fused ReLU, `A` fused add+ReLU).

use super::{norm_flags, tensor_dims, EPSILON};
use crate::api::norm_flags as nf;
use crate::api::Handle;
use crate::build::{find, prop, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let dims = tensor_dims(p)?;
    let flags = norm_flags(
        p,
        &[
            ('G', nf::USE_GLOBAL_STATS),
            ('C', nf::USE_SCALE),
            ('H', nf::USE_SHIFT),
            ('S', nf::USE_SCALE | nf::USE_SHIFT),
            ('R', nf::FUSE_NORM_RELU),
            ('A', nf::FUSE_NORM_ADD_RELU),
        ],
    );
    let dt = b.dt.clone();
    let data = b.md(&dims, find(p, &["data", "src"]), &dt)?;
    let attr = b.attr(p, &dims)?;
    let (d, engine) = (b.d, b.engine);
    let api = &d.api;
    let check = crate::status::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field.
            unsafe {
                (api.dnnl_batch_normalization_forward_primitive_desc_create)(
                    pd, engine, prop, data, data, EPSILON, flags, attr,
                )
            },
            step,
        )
    };
    if p.prop_kind.is_forward() {
        return forward(
            &mut b.pd,
            prop(d, &p.prop_kind)?,
            attr,
            "batch normalization forward",
        );
    }
    let diff = b.md(&dims, find(p, &["diff", "diff_dst", "diff_src"]), &dt)?;
    forward(
        &mut b.hint,
        b.fwd_training,
        null_mut(),
        "batch normalization hint",
    )?;
    check(
        // SAFETY: as above; the hint was created just before and is owned until drop.
        unsafe {
            (api.dnnl_batch_normalization_backward_primitive_desc_create)(
                &mut b.pd,
                engine,
                prop(d, &p.prop_kind)?,
                diff,
                diff,
                data,
                EPSILON,
                flags,
                b.hint,
                attr,
            )
        },
        "batch normalization backward",
    )
}
