//! Group normalization, forward and backward (oneDNN 3.3+): statistics over each group of
//! channels (`g` groups) and the spatial dimensions, flags from the log's letters (`G` global
//! stats, `C` scale, `H` shift). With an older library the problem is reported as needing 3.3.

use super::{forward_or_backward, norm_flags, tensor_dims, EPSILON};
use crate::api::norm_flags as nf;
use crate::build::{find, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let api = &b.d.api;
    let (Some(fwd), Some(bwd)) = (
        api.dnnl_group_normalization_forward_primitive_desc_create,
        api.dnnl_group_normalization_backward_primitive_desc_create,
    ) else {
        return Err(SkipReason::NeedsOneDnn {
            what: "group normalization",
            version: "3.3",
        });
    };
    let dims = tensor_dims(p)?;
    let groups = profilednn_cost::Descriptor::parse(&p.problem)
        .and_then(|x| x.get("g"))
        .ok_or(SkipReason::Missing("groups (g)"))? as i64;
    let flags = norm_flags(
        p,
        &[
            ('G', nf::USE_GLOBAL_STATS),
            ('C', nf::USE_SCALE),
            ('H', nf::USE_SHIFT),
        ],
    );
    let dt = b.dt.clone();
    let src = b.md(&dims, find(p, &["src"]), &dt)?;
    let dst = b.md(&dims, find(p, &["dst"]), &dt)?;
    let attr = b.attr(p, &dims)?;
    // A backward call's gradients and its propagation; unused by a forward one.
    let (diff_src, diff_dst, bwd_prop) = if p.prop_kind.is_forward() {
        (std::ptr::null_mut(), std::ptr::null_mut(), 0)
    } else {
        (
            b.md(&dims, find(p, &["diff_src", "src"]), &dt)?,
            b.md(&dims, find(p, &["diff_dst", "dst"]), &dt)?,
            crate::build::prop(b.d, &p.prop_kind)?,
        )
    };
    let engine = b.engine;
    let forward = |pd: &mut _, prop, attr| {
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; `pd` is a live field.
        unsafe { fwd(pd, engine, prop, src, dst, groups, EPSILON, flags, attr) }
    };
    let backward = |pd: &mut _, hint| {
        // SAFETY: as above; `hint` is the forward descriptor created just before, owned by
        // the builder until drop.
        unsafe {
            bwd(
                pd, engine, bwd_prop, diff_src, diff_dst, src, groups, EPSILON, flags, hint, attr,
            )
        }
    };
    forward_or_backward(
        b,
        p,
        attr,
        [
            "group normalization forward",
            "group normalization hint",
            "group normalization backward",
        ],
        forward,
        backward,
    )
}
