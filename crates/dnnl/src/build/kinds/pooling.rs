//! Pooling, forward and backward, from the cost model's reading of the problem.

use super::spatial;
use crate::api::Handle;
use crate::build::{alg, find, i64s, prop, Built};
use profilednn_cost::PoolingProblem;
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let prb = PoolingProblem::parse(&p.problem).map_err(|e| SkipReason::Problem(e.reason))?;
    let src_d = i64s(&prb.src_dims());
    let dst_d = i64s(&prb.dst_dims());
    let dt = b.dt.clone();
    let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
    let dst = b.md(&dst_d, find(p, &["dst", "diff_dst"]), &dt)?;
    let (d, engine) = (b.d, b.engine);
    let api = &d.api;
    let a = alg(d, p.algorithm().ok_or(SkipReason::Missing("algorithm"))?)?;
    let (s, dl, pl, pr, k) = spatial(&prb.spatial);
    let attr = b.attr(p, &dst_d)?;
    let check = crate::status::check;
    // The forward descriptor, also the hint a backward one is created from.
    let forward = |pd: &mut Handle, prop: c_int, attr: Handle, step| {
        check(
            // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
            // created and owns until drop; `pd` is a live field and the 12-entry arrays
            // outlive the call.
            unsafe {
                (api.dnnl_pooling_forward_primitive_desc_create)(
                    pd,
                    engine,
                    prop,
                    a,
                    src,
                    dst,
                    s.as_ptr(),
                    k.as_ptr(),
                    dl.as_ptr(),
                    pl.as_ptr(),
                    pr.as_ptr(),
                    attr,
                )
            },
            step,
        )
    };
    if p.prop_kind.is_forward() {
        return forward(&mut b.pd, prop(d, &p.prop_kind)?, attr, "pooling forward");
    }
    forward(&mut b.hint, b.fwd_training, null_mut(), "pooling hint")?;
    check(
        // SAFETY: as above; the hint was created just before and is owned until drop.
        unsafe {
            (api.dnnl_pooling_backward_primitive_desc_create)(
                &mut b.pd,
                engine,
                a,
                src,
                dst,
                s.as_ptr(),
                k.as_ptr(),
                dl.as_ptr(),
                pl.as_ptr(),
                pr.as_ptr(),
                b.hint,
                attr,
            )
        },
        "pooling backward",
    )
}
