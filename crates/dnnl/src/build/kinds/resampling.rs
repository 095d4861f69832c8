//! Resampling (nearest, linear), forward and backward: source and destination sizes from
//! `mbNicC_[idIodO_][ihIohO_]iwIowO` (v2.3+) or `SRCDIMS DSTDIMS` (earlier); the factors follow
//! from the sizes (oneDNN computes them when given none).

use super::forward_or_backward;
use crate::build::{find, i64s, logged_alg, Built};
use profilednn_cost::{parse_dims, Descriptor};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ptr::null;

/// Source and destination dims.
fn sizes(problem: &str) -> Option<(Vec<i64>, Vec<i64>)> {
    if let Some((a, b)) = problem.split_once(' ') {
        return Some((i64s(&parse_dims(a)?), i64s(&parse_dims(b.trim())?)));
    }
    let d = Descriptor::parse(problem)?;
    let planes = [d.get("mb")? as i64, d.get("ic")? as i64];
    let (mut s, mut t) = (planes.to_vec(), planes.to_vec());
    for x in ["d", "h", "w"] {
        if d.has(&format!("i{x}")) {
            s.push(d.get(&format!("i{x}"))? as i64);
            t.push(d.get(&format!("o{x}"))? as i64);
        }
    }
    Some((s, t))
}

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let (src_d, dst_d) = sizes(&p.problem).ok_or(SkipReason::Unrecognised("resampling"))?;
    let dt = b.dt.clone();
    let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
    let dst = b.md(&dst_d, find(p, &["dst", "diff_dst"]), &dt)?;
    let attr = b.attr(p, &dst_d)?;
    let a = logged_alg(b.d, p)?;
    let (api, engine) = (&b.d.api, b.engine);
    forward_or_backward(
        b,
        p,
        attr,
        [
            "resampling forward",
            "resampling hint",
            "resampling backward",
        ],
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
        // created and owns until drop; `pd` is a live field.
        |pd, prop, attr| unsafe {
            (api.dnnl_resampling_forward_primitive_desc_create)(
                pd,
                engine,
                prop,
                a,
                null(),
                src,
                dst,
                attr,
            )
        },
        // SAFETY: as above; the hint was created just before and is owned until drop.
        |pd, hint| unsafe {
            (api.dnnl_resampling_backward_primitive_desc_create)(
                pd,
                engine,
                a,
                null(),
                src,
                dst,
                hint,
                attr,
            )
        },
    )
}
