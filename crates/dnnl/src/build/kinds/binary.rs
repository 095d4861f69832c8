//! Binary: two sources as the problem lists them (`8x64x1x1:8x64x56x56`), the destination
//! their broadcast; the sources keep their listed layouts in order.

use crate::build::{find, i64s, logged_alg, Built};
use profilednn_model::{MemoryDesc, Primitive};
use profilednn_replay::SkipReason;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let (t, _) =
        profilednn_cost::parse_dims_list(&p.problem).ok_or(SkipReason::Unrecognised("binary"))?;
    if t.len() < 2 {
        return Err(SkipReason::BinaryNeedsTwoSources);
    }
    let (s0d, s1d) = (i64s(&t[0]), i64s(&t[1]));
    let dst_d: Vec<i64> = s0d.iter().zip(&s1d).map(|(a, b)| *a.max(b)).collect();
    let listed: Vec<&MemoryDesc> = p.mds.iter().filter(|m| !m.is_absent()).collect();
    let dt = b.dt.clone();
    let s0 = b.md(&s0d, listed.first().copied(), &dt)?;
    let s1 = b.md(&s1d, listed.get(1).copied(), &dt)?;
    let dst = b.md(&dst_d, find(p, &["dst"]), &dt)?;
    let (d, engine) = (b.d, b.engine);
    let a = logged_alg(d, p)?;
    let attr = b.attr(p, &dst_d)?;
    crate::status::check(
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; the out-pointer is a live field.
        unsafe {
            (d.api.dnnl_binary_primitive_desc_create)(&mut b.pd, engine, a, s0, s1, dst, attr)
        },
        "binary",
    )
}
