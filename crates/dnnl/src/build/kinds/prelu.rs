//! PReLU, forward and backward: data and weights dims as listed (`2x16x8x8:1x16x1x1`, the
//! weights broadcast over the data).

use super::{forward_or_backward, two_tensors};
use crate::build::{find, Built};
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let (data_d, wei_d) = two_tensors(p, "prelu")?;
    let dt = b.dt.clone();
    let data = b.md(&data_d, find(p, &["data", "src"]), &dt)?;
    let wei = b.md(&wei_d, find(p, &["wei"]), &dt)?;
    let (diff, diff_wei) = if p.prop_kind.is_forward() {
        (data, wei)
    } else {
        (
            b.md(&data_d, find(p, &["diff", "diff_src", "diff_dst"]), &dt)?,
            b.md(&wei_d, find(p, &["diff_wei"]), &dt)?,
        )
    };
    let attr = b.attr(p, &data_d)?;
    let (api, engine) = (&b.d.api, b.engine);
    forward_or_backward(
        b,
        p,
        attr,
        ["prelu forward", "prelu hint", "prelu backward"],
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
        // created and owns until drop; `pd` is a live field.
        |pd, prop, attr| unsafe {
            (api.dnnl_prelu_forward_primitive_desc_create)(pd, engine, prop, data, wei, data, attr)
        },
        // SAFETY: as above; the hint was created just before and is owned until drop.
        |pd, hint| unsafe {
            (api.dnnl_prelu_backward_primitive_desc_create)(
                pd, engine, data, wei, diff, diff_wei, diff, hint, attr,
            )
        },
    )
}
