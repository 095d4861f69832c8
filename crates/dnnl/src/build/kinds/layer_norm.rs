//! Layer normalization, forward and backward, with f32 statistics over all but the last
//! dimension. RMS normalization (`M`: no mean) came with oneDNN 3.9: with an older library it
//! is reported as needing 3.9.

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
            ('M', nf::RMS_NORM),
        ],
    );
    if flags & nf::RMS_NORM != 0 && b.d.release < (3, 9) {
        return Err(SkipReason::NeedsOneDnn {
            what: "RMS normalization (flags M)",
            version: "3.9",
        });
    }
    // Unlike batch normalization's, layer normalization's backward takes the shift it reports
    // (oneDNN 3.2 counts it: "bad number of inputs (expected 6 got 5)" without it).
    b.skip_args.retain(|a| *a != crate::api::arg::SHIFT);
    let dt = b.dt.clone();
    let src = b.md(&dims, find(p, &["src"]), &dt)?;
    let dst = b.md(&dims, find(p, &["dst"]), &dt)?;
    let stat = b.md(&dims[..dims.len() - 1], find(p, &["stats"]), "f32")?;
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
                (api.dnnl_layer_normalization_forward_primitive_desc_create)(
                    pd, engine, prop, src, dst, stat, EPSILON, flags, attr,
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
            "layer normalization forward",
        );
    }
    let diff = b.md(&dims, find(p, &["diff_src", "diff_dst"]), &dt)?;
    forward(
        &mut b.hint,
        b.fwd_training,
        null_mut(),
        "layer normalization hint",
    )?;
    check(
        // SAFETY: as above; the hint was created just before and is owned until drop.
        unsafe {
            (api.dnnl_layer_normalization_backward_primitive_desc_create)(
                &mut b.pd,
                engine,
                prop(d, &p.prop_kind)?,
                diff,
                diff,
                src,
                stat,
                EPSILON,
                flags,
                b.hint,
                attr,
            )
        },
        "layer normalization backward",
    )
}
