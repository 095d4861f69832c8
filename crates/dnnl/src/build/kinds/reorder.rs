//! Reorder between two logged layouts. A reorder into a layout the library chose (`any`) has
//! no layout to rebuild, and an unknown tag would silently become another reorder: both are
//! skipped rather than timed as something else.

use super::tensor_dims;
use crate::build::{find, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let dims = tensor_dims(p)?;
    let dt = b.dt.clone();
    let src = b.md(&dims, find(p, &["src", "in"]), &dt)?;
    let dst_m = find(p, &["dst", "out"]);
    if src.is_null() || dst_m.is_some_and(|m| m.properties.contains('a')) {
        return Err(SkipReason::ReorderToAny);
    }
    let dst = b.md(&dims, dst_m, &dt)?;
    if let Some(t) = b.unknown_tags.first() {
        return Err(SkipReason::UnknownTag(t.clone()));
    }
    let attr = b.attr(p, &dims)?;
    let (d, engine) = (b.d, b.engine);
    crate::status::check(
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; the out-pointer is a live field.
        unsafe {
            (d.api.dnnl_reorder_primitive_desc_create)(&mut b.pd, src, engine, dst, engine, attr)
        },
        "reorder",
    )
}
