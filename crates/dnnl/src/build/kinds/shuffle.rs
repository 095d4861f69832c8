//! Shuffle, forward and backward: the one logged tensor regrouped along `axis` in groups of
//! `group`.

use super::{forward_or_backward, tensor_dims};
use crate::build::{find, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ffi::c_int;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let dims = tensor_dims(p)?;
    let num = |k: &'static str| {
        p.aux_value(k)
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or(SkipReason::Missing(k))
    };
    let (axis, group) = (num("axis")? as c_int, num("group")?);
    let dt = b.dt.clone();
    let data = b.md(&dims, find(p, &["data", "src", "diff_src"]), &dt)?;
    let attr = b.attr(p, &dims)?;
    let (api, engine) = (&b.d.api, b.engine);
    forward_or_backward(
        b,
        p,
        attr,
        ["shuffle forward", "shuffle hint", "shuffle backward"],
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
        // created and owns until drop; `pd` is a live field.
        |pd, prop, attr| unsafe {
            (api.dnnl_shuffle_forward_primitive_desc_create)(
                pd, engine, prop, data, data, axis, group, attr,
            )
        },
        // SAFETY: as above; the hint was created just before and is owned until drop.
        |pd, hint| unsafe {
            (api.dnnl_shuffle_backward_primitive_desc_create)(
                pd, engine, data, data, axis, group, hint, attr,
            )
        },
    )
}
