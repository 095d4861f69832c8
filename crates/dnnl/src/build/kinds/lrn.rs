//! Local response normalization, forward and backward: `ls` and `beta` from the problem
//! (`mb2ic96ih55iw55ls5beta0.75`); alpha and k are not printed, so benchdnn's defaults
//! (1/8192, 1), which do not change the work.

use super::{forward_or_backward, tensor_dims};
use crate::build::{find, logged_alg, Built};
use profilednn_cost::Descriptor;
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;

pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let dims = tensor_dims(p)?;
    let desc = Descriptor::parse(&p.problem).unwrap_or_default();
    let ls = desc.get("ls").unwrap_or(5) as i64;
    let num = |k: &str, def: f64| desc.number(k).unwrap_or(def) as f32;
    let (alpha, beta, k) = (num("alpha", 1.0 / 8192.0), num("beta", 0.75), num("k", 1.0));
    let dt = b.dt.clone();
    let data = b.md(&dims, find(p, &["data", "src"]), &dt)?;
    let diff = if p.prop_kind.is_forward() {
        data
    } else {
        b.md(&dims, find(p, &["diff", "diff_src", "diff_dst"]), &dt)?
    };
    let attr = b.attr(p, &dims)?;
    let a = logged_alg(b.d, p)?;
    let (api, engine) = (&b.d.api, b.engine);
    forward_or_backward(
        b,
        p,
        attr,
        ["lrn forward", "lrn hint", "lrn backward"],
        // SAFETY: a oneDNN C API call on descriptor and attribute handles this builder
        // created and owns until drop; `pd` is a live field.
        |pd, prop, attr| unsafe {
            (api.dnnl_lrn_forward_primitive_desc_create)(
                pd, engine, prop, a, data, data, ls, alpha, beta, k, attr,
            )
        },
        // SAFETY: as above; the hint was created just before and is owned until drop.
        |pd, hint| unsafe {
            (api.dnnl_lrn_backward_primitive_desc_create)(
                pd, engine, a, diff, diff, data, ls, alpha, beta, k, hint, attr,
            )
        },
    )
}
