//! Sum of the listed sources, each with scale 1 (the log does not print the scales; they do
//! not change the work).

use super::tensor_dims;
use crate::build::{find, Built};
use profilednn_model::{MemoryDesc, Primitive};
use profilednn_replay::SkipReason;
use std::ffi::c_int;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let dims = tensor_dims(p)?;
    let srcs: Vec<&MemoryDesc> = p
        .mds
        .iter()
        .filter(|m| m.arg.starts_with("src") && !m.is_absent())
        .collect();
    let dt = b.dt.clone();
    let mut handles = Vec::new();
    for m in &srcs {
        handles.push(b.md(&dims, Some(m), &dt)?);
    }
    let dst = b.md(&dims, find(p, &["dst"]), &dt)?;
    let scales = vec![1.0f32; handles.len()];
    let attr = b.attr(p, &dims)?;
    let (d, engine) = (b.d, b.engine);
    crate::status::check(
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; the out-pointer is a live field, `scales` and `handles` hold
        // `handles.len()` entries and outlive the call.
        unsafe {
            (d.api.dnnl_sum_primitive_desc_create)(
                &mut b.pd,
                engine,
                dst,
                handles.len() as c_int,
                scales.as_ptr(),
                handles.as_ptr(),
                attr,
            )
        },
        "sum",
    )
}
