//! oneDNN's v3 C API, loaded at run time (`dlopen` of `libdnnl.so.3`) so that ProfileDNN builds
//! and runs without oneDNN, and replays with whichever oneDNN the user points it at.
//!
//! Enum values are not hard-coded from a header: the library's own debug functions
//! (`dnnl_fmt_tag2str`, `dnnl_alg_kind2str`, …) name every value, so the tables are built by
//! asking the loaded library.

use libloading::Library;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::{Path, PathBuf};

pub type Handle = *mut c_void;
pub type Dims = [i64; 12];
pub type Status = c_int;

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

macro_rules! api {
    ($($name:ident : fn($($arg:ty),*) -> $ret:ty;)*) => {
        /// The entry points ProfileDNN uses.
        #[allow(non_snake_case)]
        pub struct Api {
            _lib: Library,
            pub path: PathBuf,
            $(pub $name: unsafe extern "C" fn($($arg),*) -> $ret,)*
        }
        impl Api {
            fn load(path: &Path) -> Result<Api, String> {
                // SAFETY: loading oneDNN runs its initialisers, which is what it is for.
                let lib = unsafe { Library::new(path) }.map_err(|e| e.to_string())?;
                // SAFETY: the library was loaded and its symbols resolved with the C API's signatures; the returned C strings are owned by the library and live as long as it stays loaded.
                unsafe {
                    $(let $name = *lib
                        .get::<unsafe extern "C" fn($($arg),*) -> $ret>(concat!(stringify!($name), "\0").as_bytes())
                        .map_err(|e| format!("{}: {e} (is this oneDNN 3.x?)", stringify!($name)))?;)*
                    Ok(Api { _lib: lib, path: path.to_path_buf(), $($name,)* })
                }
            }
        }
    };
}

api! {
    dnnl_version: fn() -> *const Version;
    dnnl_engine_create: fn(*mut Handle, c_int, usize) -> Status;
    dnnl_stream_create: fn(*mut Handle, Handle, c_uint) -> Status;
    dnnl_stream_wait: fn(Handle) -> Status;
    dnnl_memory_desc_create_with_tag: fn(*mut Handle, c_int, *const i64, c_int, c_int) -> Status;
    dnnl_memory_desc_create_with_strides: fn(*mut Handle, c_int, *const i64, c_int, *const i64) -> Status;
    dnnl_memory_desc_destroy: fn(Handle) -> Status;
    dnnl_memory_desc_get_size: fn(Handle) -> usize;
    dnnl_memory_create: fn(*mut Handle, Handle, Handle, *mut c_void) -> Status;
    dnnl_memory_get_data_handle: fn(Handle, *mut *mut c_void) -> Status;
    dnnl_memory_destroy: fn(Handle) -> Status;
    dnnl_primitive_attr_create: fn(*mut Handle) -> Status;
    dnnl_primitive_attr_destroy: fn(Handle) -> Status;
    dnnl_primitive_attr_set_scratchpad_mode: fn(Handle, c_int) -> Status;
    dnnl_primitive_attr_set_fpmath_mode: fn(Handle, c_int) -> Status;
    dnnl_primitive_attr_set_post_ops: fn(Handle, Handle) -> Status;
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
    dnnl_fmt_tag2str: fn(c_int) -> *const c_char;
    dnnl_alg_kind2str: fn(c_int) -> *const c_char;
    dnnl_prop_kind2str: fn(c_int) -> *const c_char;
    dnnl_dt2str: fn(c_int) -> *const c_char;
}

/// The library plus name → value tables for its enums.
pub struct Dnnl {
    pub api: Api,
    pub version: String,
    pub tags: HashMap<String, c_int>,
    pub algs: HashMap<String, c_int>,
    pub props: HashMap<String, c_int>,
    pub dts: HashMap<String, c_int>,
}

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
    if let Some(p) = std::env::var_os("PROFILEDNN_DNNL_LIB") {
        v.push(PathBuf::from(p));
    }
    // pip installs onednn-cpu-gomp's library under the environment's prefix.
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
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

pub const INSTALL_HINT: &str =
    "install oneDNN 3.x: `pip install onednn-cpu-gomp==2023.2.0` (or pass --dnnl-lib PATH/libdnnl.so.3, or set PROFILEDNN_DNNL_LIB)";

impl Dnnl {
    pub fn load(explicit: Option<&Path>) -> Result<Dnnl, String> {
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
        Err(format!(
            "oneDNN (libdnnl.so.3) not found{}; {INSTALL_HINT}",
            if tried.is_empty() {
                String::new()
            } else {
                format!(" ({})", tried.join("; "))
            }
        ))
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
        Dnnl {
            tags: names(api.dnnl_fmt_tag2str, 0..4096),
            algs: names(api.dnnl_alg_kind2str, 0..0x40000),
            props: names(api.dnnl_prop_kind2str, 0..512),
            dts: names(api.dnnl_dt2str, 0..64),
            api,
            version,
        }
    }
}
