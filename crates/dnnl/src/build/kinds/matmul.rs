//! Matmul: the bias gets the destination's dims where its logged mask says so (default: the
//! last dimension only).

use crate::build::{find, i64s, Built};
use profilednn_cost::MatmulProblem;
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ptr::null_mut;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let prb = MatmulProblem::parse(&p.problem).map_err(|e| SkipReason::Problem(e.reason))?;
    let dt = b.dt.clone();
    let src = b.md(&i64s(&prb.src), find(p, &["src"]), &dt)?;
    let wei = b.md(&i64s(&prb.wei), find(p, &["wei"]), &dt)?;
    let dst_d = i64s(&prb.dst);
    let dst = b.md(&dst_d, find(p, &["dst"]), &dt)?;
    let bia = match find(p, &["bia"]) {
        Some(m) => {
            let mask: u64 = m
                .flags
                .split("mask")
                .nth(1)
                .and_then(|x| x.parse().ok())
                .unwrap_or(1 << (dst_d.len() - 1));
            let bd: Vec<i64> = dst_d
                .iter()
                .enumerate()
                .map(|(i, x)| if mask & (1 << i) != 0 { *x } else { 1 })
                .collect();
            b.md(&bd, Some(m), "f32")?
        }
        None => null_mut(),
    };
    let attr = b.attr(p, &dst_d)?;
    let (d, engine) = (b.d, b.engine);
    crate::status::check(
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; the out-pointer is a live field.
        unsafe {
            (d.api.dnnl_matmul_primitive_desc_create)(&mut b.pd, engine, src, wei, bia, dst, attr)
        },
        "matmul",
    )
}
