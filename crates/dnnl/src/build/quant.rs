//! Scales and zero-points as the log printed them (`attr-scales:src0:0:f32+wei:2:f32`,
//! `attr-zero-points:wei:3:s8:32x1`): the same masks, data types and groups, so that the
//! replayed primitive does the dequantization work the logged one did. Their values are data
//! (not in the log); the run fills them (`run::prepare`). Host-side scalars and dynamic
//! modes (`host_scalar`, `dynamic_mx`, `dynamic_fp`) are not rebuilt: such a problem is skipped
//! ([`SkipReason::QuantArgument`]) rather than timed with static scales.

use super::Built;
use crate::api::arg;
use profilednn_model::QuantArg;
use profilednn_replay::SkipReason;
use std::ffi::c_int;

/// One scale or zero-point argument: what `run::prepare` allocates for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quant {
    /// The tensor the values apply to (`DNNL_ARG_WEIGHTS`, …).
    pub base: c_int,
    /// `DNNL_ARG_ATTR_SCALES | base` or `DNNL_ARG_ATTR_ZERO_POINTS | base`.
    pub exec_arg: c_int,
    pub mask: u64,
    /// Group sizes over the last two dimensions.
    pub groups: Option<(i64, i64)>,
    /// The values' data type in this library.
    pub dt: c_int,
}

/// The execution argument a quantization argument name stands for: `src`/`src0` (binary,
/// reorder, inner product print `src0`), `src1`, `wei`, `dst`, `msrcN` (the N-th source of
/// sum and concat).
fn base_arg(name: &str) -> Option<c_int> {
    Some(match name {
        "src" | "src0" => arg::SRC,
        "src1" => arg::SRC_1,
        "src2" => arg::SRC_2,
        "wei" => arg::WEIGHTS,
        "dst" => arg::DST,
        "bia" => arg::BIAS,
        _ => arg::MULTIPLE_SRC + name.strip_prefix("msrc")?.parse::<c_int>().ok()?,
    })
}

impl Built<'_> {
    /// Sets one scale (`zero_point` false) or zero-point of `q` on the attributes: by mask
    /// alone where the values have the default type (f32 scales, s32 zero-points), else with
    /// their type and groups, which needs oneDNN 3.4.
    pub(crate) fn quantization(
        &mut self,
        q: &QuantArg,
        zero_point: bool,
    ) -> Result<(), SkipReason> {
        let d = self.d;
        let spec = q.parsed();
        // A host-side scalar or a dynamic quantization mode (`dynamic_mx`, `dynamic_fp`: the
        // primitive computes its scales) is another problem than static scales; the replay has
        // no binding for either, so it says so rather than time the static one.
        if spec.host_scalar || spec.mode.is_some() {
            return Err(SkipReason::QuantArgument(format!("{}:{}", q.arg, q.spec)));
        }
        let base = base_arg(&q.arg).ok_or_else(|| SkipReason::QuantArgument(q.arg.clone()))?;
        let mask = spec
            .mask
            .ok_or_else(|| SkipReason::QuantArgument(format!("{}:{}", q.arg, q.spec)))?;
        let default_dt = if zero_point { "s32" } else { "f32" };
        let dt_name = spec.data_type.clone().unwrap_or_else(|| default_dt.into());
        let dt = *d
            .dts
            .get(&dt_name)
            .ok_or_else(|| SkipReason::UnknownDataType(dt_name.clone()))?;
        let groups = spec.groups.map(|(a, b)| (a as i64, b as i64));
        let (kind, step) = if zero_point {
            (arg::ATTR_ZERO_POINTS, "zero-points")
        } else {
            (arg::ATTR_SCALES, "scales")
        };
        let status = if groups.is_none() && dt_name == default_dt {
            let f = if zero_point {
                d.api.dnnl_primitive_attr_set_zero_points_mask
            } else {
                d.api.dnnl_primitive_attr_set_scales_mask
            };
            // SAFETY: the attribute handle was created by `attr` and is owned until drop.
            unsafe { f(self.attr, base, mask as c_int) }
        } else {
            let f = if zero_point {
                d.api.dnnl_primitive_attr_set_zero_points
            } else {
                d.api.dnnl_primitive_attr_set_scales
            };
            let f = f.ok_or(SkipReason::NeedsOneDnn {
                what: "scales or zero-points with a data type or groups",
                version: "3.4",
            })?;
            let g = groups.map_or([0i64; 12], |(a, b)| super::dims12(&[a, b]));
            let ndims = if groups.is_some() { 2 } else { 0 };
            // SAFETY: as above; `g` is a 12-entry dims array that outlives the call.
            unsafe { f(self.attr, base, mask as c_int, ndims, g.as_ptr(), dt) }
        };
        crate::status::check(status, step)?;
        self.quant.push(Quant {
            base,
            exec_arg: kind | base,
            mask,
            groups,
            dt,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::run::Timing;
    use crate::session_or_skip;
    use profilednn_replay::SkipReason;
    use profilednn_whatif::testing::prim;

    const MATMUL: &str = "cpu,matmul,brg:avx512_core,undef,src:f32::blocked:ab::f0 \
        wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0";

    /// A host-side scalar scale and a dynamic (MX) quantization are not static scales: the
    /// replay skips them, naming the argument. They used to be replayed as static scales of
    /// the same mask — another problem, timed silently.
    #[test]
    fn host_scalar_and_dynamic_mode_scales_are_skipped_not_replayed_as_static() {
        let Some(s) = session_or_skip() else {
            return;
        };
        let t = Timing {
            warmup: 1,
            min_runs: 1,
            max_runs: 1,
            min_time_ms: 0.0,
        };
        // The same problem with static scales replays: the skip below is the spec's doing.
        let fine = prim(&format!("{MATMUL},attr-scales:src0:0:f32,,64x64:64x64"));
        assert!(s.replay(&fine, &t).is_ok());
        for spec in [
            "src0:0:f32:host_scalar",
            "wei:3:e8m0:1x32:dynamic_mx",
            "src0:3:f32:1x32:dynamic_fp",
        ] {
            let p = prim(&format!("{MATMUL},attr-scales:{spec},,64x64:64x64"));
            assert_eq!(
                s.replay(&p, &t).err(),
                Some(SkipReason::QuantArgument(spec.into())),
                "{spec}"
            );
        }
    }
}
