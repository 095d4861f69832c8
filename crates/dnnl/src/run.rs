//! Executing a rebuilt primitive: every argument it asks for allocated and filled with valid
//! data, warm-up runs, then timed runs until enough time and runs are collected.

use super::api::{arg, query, Dnnl, ExecArg, Handle};
use super::build::{Built, Quant};
use profilednn_replay::{Measurement, SkipReason};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr::null_mut;
use std::time::Instant;

/// How long to measure each primitive.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub warmup: u32,
    pub min_runs: u32,
    pub max_runs: u32,
    /// Keep running until this much time was measured (ms).
    pub min_time_ms: f64,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            warmup: 2,
            min_runs: 5,
            max_runs: 200,
            min_time_ms: 50.0,
        }
    }
}

/// Every argument a primitive of the replayed kinds may take, besides the numbered sources
/// of sum and the binary post-ops' second sources.
const ARGS: &[c_int] = &[
    arg::SRC,
    arg::SRC_1,
    arg::SRC_2,
    arg::SRC_3,
    arg::DST,
    arg::DST_1,
    arg::DST_2,
    arg::WEIGHTS,
    arg::WEIGHTS_1,
    arg::WEIGHTS_2,
    arg::WEIGHTS_3,
    arg::BIAS,
    arg::MEAN,
    arg::VARIANCE,
    arg::SCALE,
    arg::SHIFT,
    arg::WORKSPACE,
    arg::SCRATCHPAD,
    arg::DIFF_SRC,
    arg::DIFF_SRC_1,
    arg::DIFF_SRC_2,
    arg::DIFF_SRC_3,
    arg::DIFF_DST,
    arg::DIFF_DST_1,
    arg::DIFF_DST_2,
    arg::DIFF_WEIGHTS,
    arg::DIFF_WEIGHTS_1,
    arg::DIFF_WEIGHTS_2,
    arg::DIFF_WEIGHTS_3,
    arg::DIFF_BIAS,
    arg::DIFF_SCALE,
    arg::DIFF_SHIFT,
];

struct Memories<'a> {
    d: &'a Dnnl,
    mems: Vec<Handle>,
    /// Descriptors created here (not owned by a primitive descriptor).
    mds: Vec<Handle>,
}

impl Drop for Memories<'_> {
    fn drop(&mut self) {
        for m in &self.mems {
            // SAFETY: created by dnnl_memory_create, destroyed once.
            unsafe { (self.d.api.dnnl_memory_destroy)(*m) };
        }
        for m in &self.mds {
            // SAFETY: created by dnnl_memory_desc_create_with_tag, destroyed once.
            unsafe { (self.d.api.dnnl_memory_desc_destroy)(*m) };
        }
    }
}

impl Memories<'_> {
    /// The memory of quantization argument `q` (scales, zero-points): its descriptor is
    /// created here (one dimension, as many values as `q`'s mask asks of the base argument's
    /// dims of `pd`) and kept with the memory; returns the execution argument and its buffer.
    fn quant(
        &mut self,
        engine: Handle,
        pd: Handle,
        q: &Quant,
    ) -> Result<(ExecArg, (Handle, usize, *mut c_void)), SkipReason> {
        let d = self.d;
        let api = &d.api;
        // SAFETY: querying a descriptor we own.
        let base = unsafe { (api.dnnl_primitive_desc_query_md)(pd, query::EXEC_ARG_MD, q.base) };
        let dims = if base.is_null() {
            Vec::new()
        } else {
            md_dims(d, base)
        };
        let count = super::build::dims12(&[quant_count(q, &dims)]);
        let tag = d
            .tags
            .get("a")
            .copied()
            .unwrap_or(super::api::FORMAT_TAG_ANY);
        let mut md: Handle = null_mut();
        // SAFETY: a 12-entry dims array and a live out-pointer; the descriptor is kept in
        // `self.mds` until the memories are destroyed.
        let st = unsafe {
            (api.dnnl_memory_desc_create_with_tag)(&mut md, 1, count.as_ptr(), q.dt, tag)
        };
        crate::status::check(st, "quantization memory descriptor")?;
        self.mds.push(md);
        // SAFETY: as above.
        let size = unsafe { (api.dnnl_memory_desc_get_size)(md) };
        let mut mem: Handle = null_mut();
        // SAFETY: a memory of the descriptor just created, with a library-allocated buffer.
        let st =
            unsafe { (api.dnnl_memory_create)(&mut mem, md, engine, usize::MAX as *mut c_void) };
        if st != super::api::status::SUCCESS {
            return Err(SkipReason::Allocation {
                arg: q.exec_arg,
                bytes: size,
            });
        }
        self.mems.push(mem);
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: the memory was just created; `size` bytes are valid at its handle.
        unsafe { (api.dnnl_memory_get_data_handle)(mem, &mut ptr) };
        if !ptr.is_null() {
            // Scales 0x3e bytes (0.19 in f32 and bf16); zero-points 0.
            let fill = if q.exec_arg & arg::ATTR_ZERO_POINTS != 0 {
                0
            } else {
                0x3e
            };
            // SAFETY: `size` bytes are valid at `ptr`.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, fill, size) };
        }
        Ok((
            ExecArg {
                arg: q.exec_arg,
                memory: mem,
            },
            (md, size, ptr),
        ))
    }
}

/// Logical dims of a memory descriptor.
fn md_dims(d: &Dnnl, md: Handle) -> Vec<i64> {
    let mut nd: c_int = 0;
    let mut dims: *const i64 = std::ptr::null();
    // SAFETY: queries of a live descriptor into live locals; `dims` then points at the
    // descriptor's own array of `nd` entries.
    unsafe {
        (d.api.dnnl_memory_desc_query)(md, query::NDIMS_S32, &mut nd as *mut c_int as *mut c_void);
        (d.api.dnnl_memory_desc_query)(
            md,
            query::DIMS,
            &mut dims as *mut *const i64 as *mut c_void,
        );
        if dims.is_null() || nd <= 0 {
            return Vec::new();
        }
        std::slice::from_raw_parts(dims, nd as usize).to_vec()
    }
}

/// How many values a scale or zero-point argument holds: the masked dims of its tensor, the
/// last two divided by the group sizes.
fn quant_count(q: &Quant, dims: &[i64]) -> i64 {
    let mut per: Vec<i64> = dims
        .iter()
        .enumerate()
        .map(|(i, x)| if q.mask & (1 << i) != 0 { *x } else { 1 })
        .collect();
    if let (Some((g0, g1)), n @ 2..) = (q.groups, per.len()) {
        let groups = |x: i64, g: i64| (x + g.max(1) - 1) / g.max(1);
        per[n - 2] = groups(per[n - 2], g0);
        per[n - 1] = groups(per[n - 1], g1);
    }
    per.iter().product::<i64>().max(1)
}

pub(crate) fn implementation(d: &Dnnl, pd: Handle) -> String {
    let mut s: *const c_char = std::ptr::null();
    // SAFETY: the query writes a pointer to a string owned by the descriptor.
    let st = unsafe {
        (d.api.dnnl_primitive_desc_query)(
            pd,
            query::IMPL_INFO_STR,
            0,
            &mut s as *mut _ as *mut c_void,
        )
    };
    if st != super::api::status::SUCCESS || s.is_null() {
        return String::new();
    }
    // SAFETY: oneDNN C API calls on the descriptor we own; memories are created from its own argument descriptors, so `size` bytes are valid at the data handle (null checked), and every out-pointer is a live local.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// A primitive ready to execute: created, with every argument it asks for allocated and
/// filled. Destroys the primitive and its memories when dropped.
pub(crate) struct Prepared<'a> {
    d: &'a Dnnl,
    pub(crate) implementation: String,
    pub(crate) prim: Handle,
    pub(crate) args: Vec<ExecArg>,
    /// Per entry of `args`: its memory descriptor (owned by the primitive descriptor), size in
    /// bytes and data pointer, for the sequence replay's tensor flow.
    pub(crate) buffers: Vec<(Handle, usize, *mut c_void)>,
    _mems: Memories<'a>,
}

impl Drop for Prepared<'_> {
    fn drop(&mut self) {
        // SAFETY: created by dnnl_primitive_create in `prepare`, destroyed once.
        unsafe { (self.d.api.dnnl_primitive_destroy)(self.prim) };
    }
}

impl Prepared<'_> {
    /// One execution, waited for; its wall time in ms.
    pub(crate) fn execute(&self, stream: Handle) -> Result<f64, SkipReason> {
        self.execute_with(stream, &self.args)
    }

    /// One execution with `args` (this primitive's own, or some bound to other buffers).
    pub(crate) fn execute_with(&self, stream: Handle, args: &[ExecArg]) -> Result<f64, SkipReason> {
        let api = &self.d.api;
        let start = Instant::now();
        // SAFETY: the primitive and every argument memory are alive (owned by `self`).
        let st = unsafe {
            (api.dnnl_primitive_execute)(self.prim, stream, args.len() as c_int, args.as_ptr())
        };
        // SAFETY: the stream outlives this call (owned by the session).
        unsafe { (api.dnnl_stream_wait)(stream) };
        if st != super::api::status::SUCCESS {
            return Err(SkipReason::Execution(st));
        }
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }
}

pub(crate) fn prepare<'a>(
    d: &'a Dnnl,
    engine: Handle,
    b: &Built,
) -> Result<Prepared<'a>, SkipReason> {
    let api = &d.api;
    let implementation = implementation(d, b.pd);
    let mut mems = Memories {
        d,
        mems: Vec::new(),
        mds: Vec::new(),
    };
    let mut args: Vec<ExecArg> = Vec::new();
    let mut buffers = Vec::new();
    let candidates = ARGS
        .iter()
        .copied()
        .chain((0..64).map(|i| arg::MULTIPLE_SRC + i))
        .chain((0..8).map(|i| arg::attr_multiple_post_op(i) | arg::SRC_1));
    for index in candidates {
        // SAFETY: querying a descriptor we own; a null or zero-size md means "not used".
        let md = unsafe { (api.dnnl_primitive_desc_query_md)(b.pd, query::EXEC_ARG_MD, index) };
        if md.is_null() || b.skip_args.contains(&index) {
            continue;
        }
        // SAFETY: oneDNN C API calls on the descriptor we own; memories are created from its own argument descriptors, so `size` bytes are valid at the data handle (null checked), and every out-pointer is a live local.
        let size = unsafe { (api.dnnl_memory_desc_get_size)(md) };
        if size == 0 {
            continue;
        }
        let mut mem: Handle = null_mut();
        let st =
            // SAFETY: oneDNN C API calls on the descriptor we own; memories are created from its own argument descriptors, so `size` bytes are valid at the data handle (null checked), and every out-pointer is a live local.
            unsafe { (api.dnnl_memory_create)(&mut mem, md, engine, usize::MAX as *mut c_void) };
        if st != super::api::status::SUCCESS {
            return Err(SkipReason::Allocation {
                arg: index,
                bytes: size,
            });
        }
        mems.mems.push(mem);
        let mut ptr: *mut c_void = null_mut();
        // SAFETY: oneDNN C API calls on the descriptor we own; memories are created from its own argument descriptors, so `size` bytes are valid at the data handle (null checked), and every out-pointer is a live local.
        unsafe { (api.dnnl_memory_get_data_handle)(mem, &mut ptr) };
        if !ptr.is_null() {
            // Valid data for every type: 0x3e bytes are small positive floats and ints
            // (0.19 in f32 and bf16); a workspace holds indices, zero is the safe one.
            let fill = if index == arg::WORKSPACE { 0 } else { 0x3e };
            // SAFETY: oneDNN C API calls on the descriptor we own; memories are created from its own argument descriptors, so `size` bytes are valid at the data handle (null checked), and every out-pointer is a live local.
            unsafe { std::ptr::write_bytes(ptr as *mut u8, fill, size) };
        }
        if crate::env::debug_replay() {
            eprintln!("replay: {implementation}: argument {index}: {size} bytes");
        }
        args.push(ExecArg {
            arg: index,
            memory: mem,
        });
        buffers.push((md, size, ptr));
    }
    for q in &b.quant {
        let (exec_arg, buffer) = mems.quant(engine, b.pd, q)?;
        args.push(exec_arg);
        buffers.push(buffer);
    }
    let mut prim: Handle = null_mut();
    // SAFETY: oneDNN C API calls on the descriptor we own; memories are created from its own argument descriptors, so `size` bytes are valid at the data handle (null checked), and every out-pointer is a live local.
    let st = unsafe { (api.dnnl_primitive_create)(&mut prim, b.pd) };
    if st != super::api::status::SUCCESS {
        return Err(SkipReason::PrimitiveCreation(st));
    }
    Ok(Prepared {
        d,
        implementation,
        prim,
        args,
        buffers,
        _mems: mems,
    })
}

/// Median and spread of a set of per-call times.
pub(crate) fn summarize(implementation: String, mut times: Vec<f64>) -> Measurement {
    times.sort_by(f64::total_cmp);
    let q = |f: f64| times[((times.len() - 1) as f64 * f).round() as usize];
    Measurement {
        implementation,
        runs: times.len() as u32,
        median_ms: q(0.5),
        min_ms: times[0],
        max_ms: *times.last().unwrap(),
        p10_ms: q(0.1),
        p90_ms: q(0.9),
    }
}

pub(crate) fn measure(
    d: &Dnnl,
    engine: Handle,
    stream: Handle,
    b: &Built,
    t: &Timing,
    progress: &dyn crate::Progress,
) -> Result<Measurement, SkipReason> {
    let p = prepare(d, engine, b)?;
    for _ in 0..t.warmup {
        p.execute(stream)?;
    }
    let mut times = Vec::new();
    let mut total = 0.0;
    while (times.len() < t.min_runs as usize || total < t.min_time_ms)
        && times.len() < t.max_runs as usize
        && (times.is_empty() || !progress.stopped())
    {
        let ms = p.execute(stream)?;
        total += ms;
        times.push(ms);
    }
    Ok(summarize(p.implementation.clone(), times))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts derived by hand from oneDNN's definitions: a mask keeps a dimension, groups of
    /// `AxB` over the last two dimensions share one value.
    #[test]
    fn scale_counts_follow_mask_and_groups() {
        let q = |mask, groups| Quant {
            base: arg::WEIGHTS,
            exec_arg: arg::ATTR_SCALES | arg::WEIGHTS,
            mask,
            groups,
            dt: 0,
        };
        let wei = [256, 128];
        assert_eq!(quant_count(&q(0, None), &wei), 1, "common");
        assert_eq!(quant_count(&q(2, None), &wei), 128, "per output channel");
        assert_eq!(quant_count(&q(3, None), &wei), 256 * 128);
        // wei:3:bf16:32x1: one value per 32 rows of K, per column.
        assert_eq!(quant_count(&q(3, Some((32, 1))), &wei), 8 * 128);
        // A group that does not divide its dimension still gets a value for the rest.
        assert_eq!(quant_count(&q(3, Some((100, 1))), &wei), 3 * 128);
        assert_eq!(quant_count(&q(2, None), &[2, 64, 56, 56]), 64);
    }
}
