//! Reduction: source and destination dims as listed (`2x64x56x56:2x64x1x1`), the logged
//! algorithm, `p` and `eps`.

use super::two_tensors;
use crate::build::{find, logged_alg, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let (src_d, dst_d) = two_tensors(p, "reduction")?;
    let num = |k| {
        p.aux_value(k)
            .and_then(|v| v.parse::<f32>().ok())
            .unwrap_or(0.0)
    };
    let dt = b.dt.clone();
    let src = b.md(&src_d, find(p, &["src"]), &dt)?;
    let dst = b.md(&dst_d, find(p, &["dst"]), &dt)?;
    let (d, engine) = (b.d, b.engine);
    let a = logged_alg(d, p)?;
    let attr = b.attr(p, &dst_d)?;
    crate::status::check(
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder created
        // and owns until drop; the out-pointer is a live field.
        unsafe {
            (d.api.dnnl_reduction_primitive_desc_create)(
                &mut b.pd,
                engine,
                a,
                src,
                dst,
                num("p"),
                num("eps"),
                attr,
            )
        },
        "reduction",
    )
}
