//! Primitive attributes as the log printed them: a user scratchpad (so a timed run allocates
//! nothing), the fpmath mode, scales and zero-points (`quant`), and the post-ops.

use super::memory::plain_tag;
use super::Built;
use crate::api::{fpmath, Handle, SCRATCHPAD_MODE_USER};
use profilednn_model::{
    Attribute, DataType, FormatKind, MemoryDesc, PostOp, PostOpKind, Primitive,
};
use profilednn_replay::SkipReason;

/// `dnnl_fpmath_mode_t` of the mode the log names.
fn fpmath_mode(mode: &str) -> Result<std::ffi::c_int, SkipReason> {
    Ok(match mode {
        "strict" => fpmath::STRICT,
        "bf16" => fpmath::BF16,
        "f16" => fpmath::F16,
        "any" => fpmath::ANY,
        "tf32" => fpmath::TF32,
        o => return Err(SkipReason::FpmathMode(o.to_string())),
    })
}

impl Built<'_> {
    /// The attributes of `p`; `dst_dims` are the destination's, which binary post-ops
    /// broadcast against.
    pub(crate) fn attr(&mut self, p: &Primitive, dst_dims: &[i64]) -> Result<Handle, SkipReason> {
        let d = self.d;
        let api = &d.api;
        // SAFETY: a oneDNN C API call on the attribute handle this builder creates and owns
        // until drop; the out-pointer is a live field.
        unsafe {
            crate::status::check(
                (api.dnnl_primitive_attr_create)(&mut self.attr),
                "attributes",
            )?;
            // User scratchpad: the replay passes it, so timing includes no allocation.
            crate::status::check(
                (api.dnnl_primitive_attr_set_scratchpad_mode)(self.attr, SCRATCHPAD_MODE_USER),
                "scratchpad",
            )?;
        }
        for a in &p.attrs.items {
            match a {
                Attribute::Fpmath { mode, .. } => {
                    let v = fpmath_mode(mode)?;
                    crate::status::check(
                        // SAFETY: the attribute handle was created above and is owned until drop.
                        unsafe { (api.dnnl_primitive_attr_set_fpmath_mode)(self.attr, v) },
                        "fpmath",
                    )?;
                }
                Attribute::Scales(args) => {
                    for q in args {
                        self.quantization(q, false)?;
                    }
                }
                Attribute::ZeroPoints(args) => {
                    for q in args {
                        self.quantization(q, true)?;
                    }
                }
                _ => {}
            }
        }
        let pos = p.attrs.post_ops();
        if !pos.is_empty() {
            // SAFETY: the out-pointer is a live field; the post-ops are owned until drop.
            unsafe {
                crate::status::check((api.dnnl_post_ops_create)(&mut self.post_ops), "post-ops")?
            };
            for po in pos {
                self.post_op(po, dst_dims)?;
            }
            crate::status::check(
                // SAFETY: both handles were created by this builder and are owned until drop.
                unsafe { (api.dnnl_primitive_attr_set_post_ops)(self.attr, self.post_ops) },
                "post-ops",
            )?;
        }
        Ok(self.attr)
    }

    /// Appends one post-op; its numbers (scale, alpha, beta) are read from the logged text.
    fn post_op(&mut self, po: &PostOp, dst_dims: &[i64]) -> Result<(), SkipReason> {
        let d = self.d;
        let api = &d.api;
        let mut f = po.raw.split(':');
        let head = f.next().unwrap_or("");
        let rest: Vec<&str> = f.collect();
        let num = |i: usize, def: f32| rest.get(i).and_then(|x| x.parse().ok()).unwrap_or(def);
        let post_op_alg = |alg: &str| {
            d.algs
                .get(alg)
                .copied()
                .ok_or_else(|| SkipReason::UnknownPostOp(alg.to_string()))
        };
        match &po.kind {
            PostOpKind::Eltwise { alg } => {
                let a = post_op_alg(alg)?;
                crate::status::check(
                    // SAFETY: the post-ops handle was created by `attr` and is owned until drop.
                    unsafe {
                        (api.dnnl_post_ops_append_eltwise)(
                            self.post_ops,
                            a,
                            num(0, 0.0),
                            num(1, 0.0),
                        )
                    },
                    "eltwise post-op",
                )
            }
            PostOpKind::Sum => crate::status::check(
                // SAFETY: the post-ops handle was created by `attr` and is owned until drop.
                unsafe { (api.dnnl_post_ops_append_sum)(self.post_ops, num(0, 1.0), 0, 0) },
                "sum post-op",
            ),
            PostOpKind::Binary {
                alg,
                data_type,
                mask,
            } => {
                let a = post_op_alg(alg)?;
                // The second source has the destination's dims where the mask says so, else 1.
                let mask = mask.unwrap_or(0);
                let dims: Vec<i64> = dst_dims
                    .iter()
                    .enumerate()
                    .map(|(i, d)| if mask & (1 << i) != 0 { *d } else { 1 })
                    .collect();
                let dt = data_type
                    .as_ref()
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "f32".into());
                let src1 = MemoryDesc {
                    arg: "src1".into(),
                    data_type: DataType::parse(&dt).unwrap_or(DataType::F32),
                    properties: String::new(),
                    format_kind: FormatKind::Blocked,
                    tag: plain_tag(dims.len()),
                    strides: String::new(),
                    flags: "f0".into(),
                };
                let md = self.md(&dims, Some(&src1), "f32")?;
                crate::status::check(
                    // SAFETY: the post-ops handle and `md` were created by this builder and are
                    // owned until drop.
                    unsafe { (api.dnnl_post_ops_append_binary)(self.post_ops, a, md) },
                    "binary post-op",
                )
            }
            _ => Err(SkipReason::PostOpNotReplayed(head.to_string())),
        }
    }
}
