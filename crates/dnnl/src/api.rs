//! oneDNN's v3 C API, loaded at run time (`dlopen` of `libdnnl.so.3`) so that ProfileDNN builds
//! and runs without oneDNN, and replays with whichever oneDNN the user points it at.
//!
//! Two kinds of enum values. The large, growing vocabularies (layout tags, algorithms,
//! propagation kinds, data types) are not hard-coded: the library's own debug functions
//! (`dnnl_fmt_tag2str`, `dnnl_alg_kind2str`, …) name every value, so those tables are built by
//! asking the loaded library, and a log naming a tag this oneDNN does not know is told so. The
//! few values the replay passes itself (argument indices, status codes, the `any` tag,
//! scratchpad and fpmath modes, queries, normalization flags) have no such function; they are
//! part of the v3 ABI, named below after `dnnl_types.h` / `dnnl_common_types.h`, and a test
//! (`tests/constants_match_headers.rs`) checks each against the headers of the oneDNN installed.

use libloading::Library;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::{Path, PathBuf};

pub type Handle = *mut c_void;
pub type Dims = [i64; 12];
pub type Status = c_int;

/// `dnnl_status_t`: what every C API call returns.
pub mod status {
    use std::ffi::c_int;
    /// `dnnl_success`
    pub const SUCCESS: c_int = 0;
    /// `dnnl_out_of_memory`
    pub const OUT_OF_MEMORY: c_int = 1;
    /// `dnnl_invalid_arguments`
    pub const INVALID_ARGUMENTS: c_int = 2;
    /// `dnnl_unimplemented`: no implementation for this problem on this engine.
    pub const UNIMPLEMENTED: c_int = 3;
}

/// `DNNL_ARG_*`: which tensor an execution argument is.
pub mod arg {
    use std::ffi::c_int;
    /// `DNNL_ARG_SRC` (`DNNL_ARG_SRC_0`)
    pub const SRC: c_int = 1;
    /// `DNNL_ARG_SRC_1`; also a binary post-op's second source, added to its base.
    pub const SRC_1: c_int = 2;
    /// `DNNL_ARG_SRC_2`
    pub const SRC_2: c_int = 3;
    /// `DNNL_ARG_SRC_3` (an AUGRU's attention)
    pub const SRC_3: c_int = 4;
    /// `DNNL_ARG_DST` (`DNNL_ARG_DST_0`)
    pub const DST: c_int = 17;
    /// `DNNL_ARG_DST_1`
    pub const DST_1: c_int = 18;
    /// `DNNL_ARG_DST_2`
    pub const DST_2: c_int = 19;
    /// `DNNL_ARG_WEIGHTS` (`DNNL_ARG_WEIGHTS_0`)
    pub const WEIGHTS: c_int = 33;
    /// `DNNL_ARG_WEIGHTS_1`
    pub const WEIGHTS_1: c_int = 34;
    /// `DNNL_ARG_WEIGHTS_2` (an LSTM's peephole weights)
    pub const WEIGHTS_2: c_int = 35;
    /// `DNNL_ARG_WEIGHTS_3` (an LSTM's projection weights)
    pub const WEIGHTS_3: c_int = 36;
    /// `DNNL_ARG_BIAS`
    pub const BIAS: c_int = 41;
    /// `DNNL_ARG_MEAN`
    pub const MEAN: c_int = 49;
    /// `DNNL_ARG_VARIANCE`
    pub const VARIANCE: c_int = 50;
    /// `DNNL_ARG_SCALE`
    pub const SCALE: c_int = 51;
    /// `DNNL_ARG_SHIFT`
    pub const SHIFT: c_int = 52;
    /// `DNNL_ARG_WORKSPACE`
    pub const WORKSPACE: c_int = 64;
    /// `DNNL_ARG_SCRATCHPAD`
    pub const SCRATCHPAD: c_int = 80;
    /// `DNNL_ARG_DIFF_SRC` (`DNNL_ARG_DIFF_SRC_0`)
    pub const DIFF_SRC: c_int = 129;
    /// `DNNL_ARG_DIFF_SRC_1`
    pub const DIFF_SRC_1: c_int = 130;
    /// `DNNL_ARG_DIFF_SRC_2`
    pub const DIFF_SRC_2: c_int = 131;
    /// `DNNL_ARG_DIFF_SRC_3`
    pub const DIFF_SRC_3: c_int = 132;
    /// `DNNL_ARG_DIFF_DST` (`DNNL_ARG_DIFF_DST_0`)
    pub const DIFF_DST: c_int = 145;
    /// `DNNL_ARG_DIFF_DST_1`
    pub const DIFF_DST_1: c_int = 146;
    /// `DNNL_ARG_DIFF_DST_2`
    pub const DIFF_DST_2: c_int = 147;
    /// `DNNL_ARG_DIFF_WEIGHTS` (`DNNL_ARG_DIFF_WEIGHTS_0`)
    pub const DIFF_WEIGHTS: c_int = 161;
    /// `DNNL_ARG_DIFF_WEIGHTS_1`
    pub const DIFF_WEIGHTS_1: c_int = 162;
    /// `DNNL_ARG_DIFF_WEIGHTS_2`
    pub const DIFF_WEIGHTS_2: c_int = 163;
    /// `DNNL_ARG_DIFF_WEIGHTS_3`
    pub const DIFF_WEIGHTS_3: c_int = 164;
    /// `DNNL_ARG_DIFF_BIAS`
    pub const DIFF_BIAS: c_int = 169;
    /// `DNNL_ARG_DIFF_SCALE`
    pub const DIFF_SCALE: c_int = 255;
    /// `DNNL_ARG_DIFF_SHIFT`
    pub const DIFF_SHIFT: c_int = 256;
    /// `DNNL_ARG_MULTIPLE_SRC`: the `i`-th source of sum/concat is this plus `i`.
    pub const MULTIPLE_SRC: c_int = 1024;
    /// `DNNL_ARG_ATTR_SCALES`: or-ed with an argument, the scales of that argument.
    pub const ATTR_SCALES: c_int = 4096;
    /// `DNNL_ARG_ATTR_ZERO_POINTS`: or-ed with an argument, its zero-points.
    pub const ATTR_ZERO_POINTS: c_int = 8192;
    /// `DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE`
    pub const ATTR_MULTIPLE_POST_OP_BASE: c_int = 32768;

    /// `DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx)`: the arguments of post-op `idx` are this plus
    /// their own index.
    pub const fn attr_multiple_post_op(idx: c_int) -> c_int {
        ATTR_MULTIPLE_POST_OP_BASE * (idx + 1)
    }
}

/// `dnnl_format_tag_any`: the implementation picks the layout.
pub const FORMAT_TAG_ANY: c_int = 1;

/// `dnnl_blocked`: the format kind of a strided or blocked descriptor.
pub const FORMAT_KIND_BLOCKED: c_int = 2;
/// `dnnl_cpu` (`dnnl_engine_kind_t`)
pub const ENGINE_KIND_CPU: c_int = 1;
/// `dnnl_stream_in_order` (`dnnl_stream_flags_t`)
pub const STREAM_IN_ORDER: c_uint = 1;
/// `dnnl_scratchpad_mode_user`: the caller passes the scratchpad, so a timed execution
/// allocates nothing.
pub const SCRATCHPAD_MODE_USER: c_int = 1;

/// `dnnl_rnn_direction_t`: which way an RNN runs over time.
pub mod rnn_direction {
    use std::ffi::c_int;
    /// `dnnl_unidirectional_left2right`
    pub const LEFT2RIGHT: c_int = 1;
    /// `dnnl_unidirectional_right2left`
    pub const RIGHT2LEFT: c_int = 2;
    /// `dnnl_bidirectional_concat`
    pub const BIDIRECTIONAL_CONCAT: c_int = 3;
    /// `dnnl_bidirectional_sum`
    pub const BIDIRECTIONAL_SUM: c_int = 4;
}

/// `dnnl_fpmath_mode_t`: how far the implementation may lower f32 arithmetic.
pub mod fpmath {
    use std::ffi::c_int;
    /// `dnnl_fpmath_mode_strict`
    pub const STRICT: c_int = 0;
    /// `dnnl_fpmath_mode_bf16`
    pub const BF16: c_int = 1;
    /// `dnnl_fpmath_mode_f16`
    pub const F16: c_int = 2;
    /// `dnnl_fpmath_mode_any`
    pub const ANY: c_int = 3;
    /// `dnnl_fpmath_mode_tf32`
    pub const TF32: c_int = 4;
}

/// `dnnl_cpu_isa_t`: the instruction set oneDNN dispatches to (`dnnl_get_effective_cpu_isa`,
/// lowered by `ONEDNN_MAX_CPU_ISA`). Each level is a bit mask containing the levels below it.
pub mod cpu_isa {
    use std::ffi::c_int;
    /// `dnnl_cpu_isa_avx2`
    pub const AVX2: c_int = 0x7;
    /// `dnnl_cpu_isa_avx2_vnni`
    pub const AVX2_VNNI: c_int = 0xf;
    /// `dnnl_cpu_isa_avx2_vnni_2`: AVX2 with bf16/f16 conversions (`AVX-NE-CONVERT`).
    pub const AVX2_VNNI_2: c_int = 0x1f;
    /// `dnnl_cpu_isa_avx512_core`: the lowest level with bf16 implementations (emulated).
    pub const AVX512_CORE: c_int = 0x27;
    /// `dnnl_cpu_isa_avx512_core_vnni`
    pub const AVX512_CORE_VNNI: c_int = 0x67;
    /// `dnnl_cpu_isa_avx512_core_bf16`: bf16 units.
    pub const AVX512_CORE_BF16: c_int = 0xe7;
    /// `dnnl_cpu_isa_avx512_core_fp16`
    pub const AVX512_CORE_FP16: c_int = 0x1ef;
    /// `dnnl_cpu_isa_avx512_core_amx`
    pub const AVX512_CORE_AMX: c_int = 0xfef;

    /// oneDNN's name of the level (`ONEDNN_MAX_CPU_ISA`'s spelling), the highest that `isa`
    /// contains.
    pub fn name(isa: c_int) -> &'static str {
        [
            (AVX512_CORE_AMX, "avx512_core_amx"),
            (AVX512_CORE_FP16, "avx512_core_fp16"),
            (AVX512_CORE_BF16, "avx512_core_bf16"),
            (AVX512_CORE_VNNI, "avx512_core_vnni"),
            (AVX512_CORE, "avx512_core"),
            (AVX2_VNNI_2, "avx2_vnni_2"),
            (AVX2_VNNI, "avx2_vnni"),
            (AVX2, "avx2"),
        ]
        .into_iter()
        .find(|(level, _)| isa & level == *level)
        .map_or("below avx2", |(_, n)| n)
    }

    /// Whether oneDNN has bf16 implementations at this level: from `avx512_core` (bf16
    /// emulated with AVX-512) or `avx2_vnni_2`; below, a bf16 convolution, matmul or eltwise is
    /// `unimplemented` (measured on an AMD EPYC Zen 3, oneDNN 3.2: `isa` avx2).
    pub fn has_bf16(isa: c_int) -> bool {
        isa & AVX512_CORE == AVX512_CORE || isa & AVX2_VNNI_2 == AVX2_VNNI_2
    }
}

/// `dnnl_query_t` values the replay asks a primitive descriptor.
pub mod query {
    use std::ffi::c_int;
    /// `dnnl_query_impl_info_str`: the implementation's name.
    pub const IMPL_INFO_STR: c_int = 8;
    /// `dnnl_query_exec_arg_md`: the memory descriptor of an execution argument.
    pub const EXEC_ARG_MD: c_int = 255;
    /// `dnnl_query_ndims_s32`: a memory descriptor's number of dimensions.
    pub const NDIMS_S32: c_int = 256;
    /// `dnnl_query_dims`: a memory descriptor's dimensions (a pointer to its array).
    pub const DIMS: c_int = 257;
    /// `dnnl_query_format_kind`: a memory descriptor's format kind.
    pub const FORMAT_KIND: c_int = 262;
    /// `dnnl_query_inner_nblks_s32`: how many innermost blocks a blocked descriptor has.
    pub const INNER_NBLKS_S32: c_int = 263;
    /// `dnnl_query_inner_blks`: the innermost blocks' sizes (a pointer to its array).
    pub const INNER_BLKS: c_int = 264;
    /// `dnnl_query_inner_idxs`: the dimension each innermost block splits (a pointer).
    pub const INNER_IDXS: c_int = 265;
    /// `dnnl_query_strides`: a blocked descriptor's outer strides (a pointer to its array).
    pub const STRIDES: c_int = 14;
}

/// `dnnl_normalization_flags_t`, the flags batch and layer normalization take.
pub mod norm_flags {
    use std::ffi::c_uint;
    /// `dnnl_use_global_stats`
    pub const USE_GLOBAL_STATS: c_uint = 0x1;
    /// `dnnl_use_scale`
    pub const USE_SCALE: c_uint = 0x2;
    /// `dnnl_use_shift`
    pub const USE_SHIFT: c_uint = 0x4;
    /// `dnnl_fuse_norm_relu`
    pub const FUSE_NORM_RELU: c_uint = 0x8;
    /// `dnnl_fuse_norm_add_relu`
    pub const FUSE_NORM_ADD_RELU: c_uint = 0x10;
    /// `dnnl_rms_norm` (oneDNN 3.9+): layer normalization without the mean.
    pub const RMS_NORM: c_uint = 0x20;
}

#[repr(C)]
pub struct Version {
    pub major: c_int,
    pub minor: c_int,
    pub patch: c_int,
    pub hash: *const c_char,
    pub cpu_runtime: c_uint,
    pub gpu_runtime: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct ExecArg {
    pub arg: c_int,
    pub memory: Handle,
}

/// Opens the oneDNN library at `path`; a library it needs that the loader does not find but
/// that lies in `path`'s directory is opened from there first (globally, so the next attempt
/// finds it) — pip's DPC++ build (`onednn` 2026.x, oneDNN 3.13) keeps its SYCL, TBB and
/// compiler runtimes beside `libdnnl.so.3` without a RUNPATH, so it loaded only with
/// `LD_LIBRARY_PATH` set. Its CPU engine runs on the OpenCL CPU runtime in the same directory,
/// whose ICD file points at the build machine's path: `OCL_ICD_FILENAMES` names it when unset.
fn open_with_siblings(path: &Path) -> Result<(Library, Vec<Library>), String> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.as_os_str().is_empty() {
        // A bare name (`libdnnl.so.3`): the loader's own search, no directory of its own.
        // SAFETY: loading oneDNN runs its initialisers, which is what it is for.
        return unsafe { Library::new(path) }
            .map(|l| (l, Vec::new()))
            .map_err(|e| e.to_string());
    }
    let ocl = dir.join("libintelocl.so");
    if ocl.exists() && !crate::env::ocl_icd_set() {
        // The ICD loader reads it when the SYCL runtime first enumerates devices, after this.
        std::env::set_var("OCL_ICD_FILENAMES", &ocl);
    }
    let mut deps = Vec::new();
    let lib = open_needing(&dir, path, &mut deps, 0)?;
    Ok((lib, deps))
}

/// Opens `path` (oneDNN itself at `depth` 0, else globally: a library it needs); while the
/// loader names a library it cannot find that lies in `dir`, opens that one first (the same
/// way, recursively) and tries again.
fn open_needing(
    dir: &Path,
    path: &Path,
    deps: &mut Vec<Library>,
    depth: usize,
) -> Result<Library, String> {
    loop {
        // SAFETY: loading oneDNN, or a library of its own distribution for it, runs their
        // initialisers, which is what they are for.
        let opened = unsafe {
            if depth == 0 {
                Library::new(path)
            } else {
                libloading::os::unix::Library::open(
                    Some(path),
                    libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
                )
                .map(Library::from)
            }
        };
        let err = match opened {
            Ok(lib) => return Ok(lib),
            Err(e) => e.to_string(),
        };
        // "…/libdnnl.so.3: libtbb.so.12: cannot open shared object file: …"
        let parts: Vec<&str> = err.split(": ").collect();
        let missing = parts
            .windows(2)
            .find(|w| w[1].starts_with("cannot open shared object file"))
            .map(|w| dir.join(w[0].trim()));
        match missing {
            Some(sibling) if sibling.exists() && depth < 16 && deps.len() < 64 => {
                let lib = open_needing(dir, &sibling, deps, depth + 1)?;
                deps.push(lib);
            }
            _ => return Err(err),
        }
    }
}

macro_rules! api {
    (required { $($name:ident : fn($($arg:ty),*) -> $ret:ty;)* }
     optional { $($oname:ident : fn($($oarg:ty),*) -> $oret:ty;)* }) => {
        /// The entry points ProfileDNN uses; the optional ones are those of later oneDNN
        /// versions than the oldest supported (3.2), `None` in a library without them.
        #[allow(non_snake_case)]
        pub struct Api {
            _lib: Library,
            /// Libraries of its own directory it needed (kept loaded while it is).
            _deps: Vec<Library>,
            pub path: PathBuf,
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
            $(pub $oname: Option<unsafe extern "C" fn($($oarg),*) -> $oret>,)*
        }
        impl Api {
            fn load(path: &Path) -> Result<Api, String> {
                let (lib, deps) = open_with_siblings(path)?;
                // SAFETY: the library was loaded and its symbols resolved with the C API's signatures; the returned C strings are owned by the library and live as long as it stays loaded.
                unsafe {
                    $(let $name = *lib
                        .get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes())
                        .map_err(|e| format!("{}: {e} (is this oneDNN 3.x?)", stringify!($name)))?;)*
                    $(let $oname = lib
                        .get::<unsafe extern "C" fn($($oarg),*) -> $oret>(concat!(stringify!($oname), "\0").as_bytes())
                        .ok()
                        .map(|f| *f);)*
                    Ok(Api { _lib: lib, _deps: deps, path: path.to_path_buf(), $($name,)* $($oname,)* })
                }
            }
        }
    };
}

api! {
    required {
    dnnl_version: fn() -> *const Version;
    dnnl_engine_create: fn(*mut Handle, c_int, usize) -> Status;
    dnnl_stream_create: fn(*mut Handle, Handle, c_uint) -> Status;
    dnnl_stream_wait: fn(Handle) -> Status;
    dnnl_memory_desc_create_with_tag: fn(*mut Handle, c_int, *const i64, c_int, c_int) -> Status;
    dnnl_memory_desc_create_with_strides: fn(*mut Handle, c_int, *const i64, c_int, *const i64) -> Status;
    dnnl_memory_desc_destroy: fn(Handle) -> Status;
    dnnl_memory_desc_clone: fn(*mut Handle, Handle) -> Status;
    dnnl_memory_desc_get_size: fn(Handle) -> usize;
    dnnl_memory_create: fn(*mut Handle, Handle, Handle, *mut c_void) -> Status;
    dnnl_memory_get_data_handle: fn(Handle, *mut *mut c_void) -> Status;
    dnnl_memory_destroy: fn(Handle) -> Status;
    dnnl_primitive_attr_create: fn(*mut Handle) -> Status;
    dnnl_primitive_attr_destroy: fn(Handle) -> Status;
    dnnl_primitive_attr_set_scratchpad_mode: fn(Handle, c_int) -> Status;
    dnnl_primitive_attr_set_fpmath_mode: fn(Handle, c_int) -> Status;
    dnnl_primitive_attr_set_post_ops: fn(Handle, Handle) -> Status;
    dnnl_primitive_attr_set_scales_mask: fn(Handle, c_int, c_int) -> Status;
    dnnl_primitive_attr_set_zero_points_mask: fn(Handle, c_int, c_int) -> Status;
    dnnl_memory_desc_query: fn(Handle, c_int, *mut c_void) -> Status;
    dnnl_post_ops_create: fn(*mut Handle) -> Status;
    dnnl_post_ops_destroy: fn(Handle) -> Status;
    dnnl_post_ops_append_eltwise: fn(Handle, c_int, f32, f32) -> Status;
    dnnl_post_ops_append_sum: fn(Handle, f32, i32, c_int) -> Status;
    dnnl_post_ops_append_binary: fn(Handle, c_int, Handle) -> Status;
    dnnl_primitive_desc_query: fn(Handle, c_int, c_int, *mut c_void) -> Status;
    dnnl_primitive_desc_query_md: fn(Handle, c_int, c_int) -> Handle;
    dnnl_primitive_desc_destroy: fn(Handle) -> Status;
    dnnl_primitive_create: fn(*mut Handle, Handle) -> Status;
    dnnl_primitive_execute: fn(Handle, Handle, c_int, *const ExecArg) -> Status;
    dnnl_primitive_destroy: fn(Handle) -> Status;
    dnnl_convolution_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, *const i64, *const i64, *const i64, *const i64, Handle) -> Status;
    dnnl_convolution_backward_data_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, *const i64, *const i64, *const i64, *const i64, Handle, Handle) -> Status;
    dnnl_convolution_backward_weights_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, Handle, *const i64, *const i64, *const i64, *const i64, Handle, Handle) -> Status;
    dnnl_deconvolution_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, *const i64, *const i64, *const i64, *const i64, Handle) -> Status;
    dnnl_deconvolution_backward_data_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, *const i64, *const i64, *const i64, *const i64, Handle, Handle) -> Status;
    dnnl_deconvolution_backward_weights_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, Handle, *const i64, *const i64, *const i64, *const i64, Handle, Handle) -> Status;
    dnnl_inner_product_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, Handle, Handle) -> Status;
    dnnl_inner_product_backward_data_primitive_desc_create: fn(*mut Handle, Handle, Handle, Handle, Handle, Handle, Handle) -> Status;
    dnnl_inner_product_backward_weights_primitive_desc_create: fn(*mut Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle) -> Status;
    dnnl_matmul_primitive_desc_create: fn(*mut Handle, Handle, Handle, Handle, Handle, Handle, Handle) -> Status;
    dnnl_eltwise_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, f32, f32, Handle) -> Status;
    dnnl_eltwise_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, f32, f32, Handle, Handle) -> Status;
    dnnl_binary_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, Handle) -> Status;
    dnnl_batch_normalization_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, f32, c_uint, Handle) -> Status;
    dnnl_batch_normalization_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, f32, c_uint, Handle, Handle) -> Status;
    dnnl_pooling_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, *const i64, *const i64, *const i64, *const i64, *const i64, Handle) -> Status;
    dnnl_pooling_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, *const i64, *const i64, *const i64, *const i64, *const i64, Handle, Handle) -> Status;
    dnnl_softmax_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, c_int, Handle) -> Status;
    dnnl_softmax_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, c_int, Handle, Handle) -> Status;
    dnnl_reorder_primitive_desc_create: fn(*mut Handle, Handle, Handle, Handle, Handle, Handle) -> Status;
    dnnl_sum_primitive_desc_create: fn(*mut Handle, Handle, Handle, c_int, *const f32, *const Handle, Handle) -> Status;
    dnnl_layer_normalization_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, f32, c_uint, Handle) -> Status;
    dnnl_layer_normalization_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, Handle, f32, c_uint, Handle, Handle) -> Status;
    dnnl_concat_primitive_desc_create: fn(*mut Handle, Handle, Handle, c_int, c_int, *const Handle, Handle) -> Status;
    dnnl_shuffle_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, c_int, i64, Handle) -> Status;
    dnnl_shuffle_backward_primitive_desc_create: fn(*mut Handle, Handle, Handle, Handle, c_int, i64, Handle, Handle) -> Status;
    dnnl_prelu_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, Handle) -> Status;
    dnnl_prelu_backward_primitive_desc_create: fn(*mut Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle) -> Status;
    dnnl_lrn_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, i64, f32, f32, f32, Handle) -> Status;
    dnnl_lrn_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, i64, f32, f32, f32, Handle, Handle) -> Status;
    dnnl_resampling_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, *const f32, Handle, Handle, Handle) -> Status;
    dnnl_resampling_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, *const f32, Handle, Handle, Handle, Handle) -> Status;
    dnnl_reduction_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, f32, f32, Handle) -> Status;
    dnnl_vanilla_rnn_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, f32, f32, Handle) -> Status;
    dnnl_vanilla_rnn_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, f32, f32, Handle, Handle) -> Status;
    dnnl_lstm_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, Handle) -> Status;
    dnnl_lstm_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, Handle, Handle) -> Status;
    dnnl_gru_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, Handle) -> Status;
    dnnl_gru_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, Handle, Handle) -> Status;
    dnnl_lbr_gru_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, Handle) -> Status;
    dnnl_lbr_gru_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, c_int, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, Handle, c_uint, Handle, Handle) -> Status;
    dnnl_fmt_tag2str: fn(c_int) -> *const c_char;
    dnnl_alg_kind2str: fn(c_int) -> *const c_char;
    dnnl_prop_kind2str: fn(c_int) -> *const c_char;
    dnnl_dt2str: fn(c_int) -> *const c_char;
    dnnl_get_effective_cpu_isa: fn() -> c_int;
    }
    optional {
        // oneDNN 3.4+: scales and zero-points with a data type and groups.
        dnnl_primitive_attr_set_scales: fn(Handle, c_int, c_int, c_int, *const i64, c_int) -> Status;
        dnnl_primitive_attr_set_zero_points: fn(Handle, c_int, c_int, c_int, *const i64, c_int) -> Status;
        // oneDNN 3.3+: group normalization.
        dnnl_group_normalization_forward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, i64, f32, c_uint, Handle) -> Status;
        dnnl_group_normalization_backward_primitive_desc_create: fn(*mut Handle, Handle, c_int, Handle, Handle, Handle, i64, f32, c_uint, Handle, Handle) -> Status;
    }
}

/// The library plus name → value tables for its enums.
pub struct Dnnl {
    pub api: Api,
    pub version: String,
    /// Major, minor: what decides the features a log needs that this library may lack.
    pub release: (i32, i32),
    pub tags: HashMap<String, c_int>,
    pub algs: HashMap<String, c_int>,
    pub props: HashMap<String, c_int>,
    pub dts: HashMap<String, c_int>,
    /// `dnnl_cpu_isa_t` oneDNN dispatches to on this CPU ([`cpu_isa`]).
    pub isa: c_int,
    /// The CPU engine's runtime (`DNNL_RUNTIME_OMP`, …, [`RUNTIME_SYCL`]).
    pub cpu_runtime: c_uint,
}

/// `DNNL_RUNTIME_SYCL`: a CPU engine that runs on the SYCL (OpenCL) CPU device, whose thread
/// count `OMP_NUM_THREADS` and `omp_set_num_threads` do not set (pip's `onednn` 2026.x).
pub const RUNTIME_SYCL: c_uint = 512;

fn names(
    f: unsafe extern "C" fn(c_int) -> *const c_char,
    range: std::ops::Range<c_int>,
) -> HashMap<String, c_int> {
    let mut m = HashMap::new();
    for v in range {
        // SAFETY: the debug functions return a static string for any value.
        let s = unsafe { f(v) };
        if s.is_null() {
            continue;
        }
        // SAFETY: the library was loaded and its symbols resolved with the C API's signatures; the returned C strings are owned by the library and live as long as it stays loaded.
        let name = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
        if name.is_empty() || name.contains("unknown") || name.contains("undef") && v != 0 {
            continue;
        }
        m.entry(name).or_insert(v);
    }
    m
}

/// Where to look for `libdnnl.so.3`, in order.
pub fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(p) = explicit {
        v.push(p.to_path_buf());
        return v;
    }
    if let Some(p) = crate::env::dnnl_lib() {
        v.push(PathBuf::from(p));
    }
    // pip installs onednn-cpu-gomp's library under the environment's prefix.
    if let Some(venv) = crate::env::virtual_env() {
        v.push(PathBuf::from(venv).join("lib/libdnnl.so.3"));
    }
    for py in ["python3", "python"] {
        if let Ok(out) = std::process::Command::new(py)
            .args([
                "-c",
                "import site,sys; print(sys.prefix); print(site.USER_BASE)",
            ])
            .output()
        {
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                v.push(PathBuf::from(line.trim()).join("lib/libdnnl.so.3"));
            }
            break;
        }
    }
    v.push(PathBuf::from("/usr/local/lib/libdnnl.so.3"));
    // Last: the system's library path.
    v.push(PathBuf::from("libdnnl.so.3"));
    v
}

/// How to get oneDNN: the end of every "not found" message.
pub const INSTALL_HINT: &str =
    "install oneDNN 3.x: `pip install onednn-cpu-gomp==2023.2.0` (or pass --dnnl-lib PATH/libdnnl.so.3, or set PROFILEDNN_DNNL_LIB)";

impl Dnnl {
    pub fn load(explicit: Option<&Path>) -> Result<Dnnl, super::ReplayError> {
        let mut tried = Vec::new();
        for path in candidates(explicit) {
            if path.is_absolute() && !path.exists() {
                continue;
            }
            match Api::load(&path) {
                Ok(api) => return Ok(Dnnl::from_api(api)),
                Err(e) => tried.push(format!("{}: {e}", path.display())),
            }
        }
        Err(super::ReplayError::NotFound { tried })
    }

    fn from_api(api: Api) -> Dnnl {
        // SAFETY: dnnl_version returns a pointer to a static struct.
        let v = unsafe { &*(api.dnnl_version)() };
        let hash = if v.hash.is_null() {
            String::new()
        } else {
            // SAFETY: the library was loaded and its symbols resolved with the C API's signatures; the returned C strings are owned by the library and live as long as it stays loaded.
            unsafe { CStr::from_ptr(v.hash) }
                .to_string_lossy()
                .into_owned()
        };
        let version = format!("{}.{}.{} ({hash})", v.major, v.minor, v.patch);
        let release = (v.major, v.minor);
        // SAFETY: a query without arguments; it reads CPUID and ONEDNN_MAX_CPU_ISA.
        let isa = unsafe { (api.dnnl_get_effective_cpu_isa)() };
        Dnnl {
            isa,
            release,
            cpu_runtime: v.cpu_runtime,
            tags: names(api.dnnl_fmt_tag2str, 0..4096),
            algs: names(api.dnnl_alg_kind2str, 0..0x40000),
            props: names(api.dnnl_prop_kind2str, 0..512),
            dts: names(api.dnnl_dt2str, 0..64),
            api,
            version,
        }
    }
}
