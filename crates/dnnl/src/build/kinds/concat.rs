//! Concat: the listed sources (`2x64x56x56:2x32x56x56`) joined along the logged axis, each
//! with its own logged layout; the destination is their join.

use crate::build::{find, i64s, Built};
use profilednn_model::{MemoryDesc, Primitive};
use profilednn_replay::SkipReason;
use std::ffi::c_int;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let (t, _) =
        profilednn_cost::parse_dims_list(&p.problem).ok_or(SkipReason::Unrecognised("concat"))?;
    let axis: usize = p
        .aux_value("axis")
        .and_then(|a| a.parse().ok())
        .ok_or(SkipReason::Missing("axis"))?;
    let first = t.first().ok_or(SkipReason::Unrecognised("concat"))?;
    if axis >= first.len() {
        return Err(SkipReason::Unrecognised("concat"));
    }
    let mut dst_d = i64s(first);
    dst_d[axis] = t.iter().map(|d| d[axis] as i64).sum();
    let srcs: Vec<&MemoryDesc> = p.mds.iter().filter(|m| m.arg == "src").collect();
    let dt = b.dt.clone();
    let mut handles = Vec::new();
    for (i, dims) in t.iter().enumerate() {
        handles.push(b.md(&i64s(dims), srcs.get(i).copied(), &dt)?);
    }
    let dst = b.md(&dst_d, find(p, &["dst"]), &dt)?;
    let attr = b.attr(p, &dst_d)?;
    let (d, engine) = (b.d, b.engine);
    crate::status::check(
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; `handles` holds `handles.len()` entries and outlives the call.
        unsafe {
            (d.api.dnnl_concat_primitive_desc_create)(
                &mut b.pd,
                engine,
                dst,
                handles.len() as c_int,
                axis as c_int,
                handles.as_ptr(),
                attr,
            )
        },
        "concat",
    )
}
