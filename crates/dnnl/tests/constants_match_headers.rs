//! The oneDNN values the replay names in `native::api` checked against the C headers of the
//! oneDNN installed (`$PROFILEDNN_DNNL_LIB`'s `../include/oneapi/dnnl/`): an independent
//! reference, read by a small parser of `#define` and `enum` here rather than copied.
//! Without the headers the test says SKIPPED, unless PROFILEDNN_REQUIRE_ONEDNN is set.

use profilednn_dnnl::api::{self, arg, cpu_isa, fpmath, norm_flags, query, rnn_direction, status};
use std::collections::HashMap;
use std::path::PathBuf;

fn header_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PROFILEDNN_DNNL_LIB")
        .map(PathBuf::from)
        .and_then(|lib| Some(lib.parent()?.join("../include/oneapi/dnnl")))
        .filter(|d| d.join("dnnl_types.h").exists());
    if dir.is_none() {
        assert!(
            std::env::var_os("PROFILEDNN_REQUIRE_ONEDNN").is_none(),
            "PROFILEDNN_REQUIRE_ONEDNN is set but the oneDNN headers were not found next to $PROFILEDNN_DNNL_LIB"
        );
        eprintln!("SKIPPED: no oneDNN headers next to $PROFILEDNN_DNNL_LIB (pip install onednn-devel-cpu-gomp==2023.2.0)");
    }
    dir
}

fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(i) = rest.find('/') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |e| &tail[e..]);
        } else if let Some(block) = tail.strip_prefix("/*") {
            rest = block.find("*/").map_or("", |e| &block[e + 2..]);
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// `123`, `0x1fU`: a C integer literal.
fn literal(s: &str) -> Option<i64> {
    let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Every `#define NAME value` and enumerator whose value is a literal, a name defined before,
/// or (enumerators) the previous one plus one.
fn values(src: &str) -> HashMap<String, i64> {
    let src = strip_comments(src);
    let mut v: HashMap<String, i64> = HashMap::new();
    let resolve =
        |v: &HashMap<String, i64>, e: &str| literal(e).or_else(|| v.get(e.trim()).copied());
    for line in src.lines() {
        let mut w = line.split_whitespace();
        if w.next() == Some("#define") {
            if let (Some(name), Some(val)) = (w.next(), w.next()) {
                if let Some(x) = resolve(&v, val) {
                    v.insert(name.to_string(), x);
                }
            }
        }
    }
    let mut rest = src.as_str();
    while let Some(i) = rest.find("enum") {
        rest = &rest[i + 4..];
        let (Some(open), Some(close)) = (rest.find('{'), rest.find('}')) else {
            break;
        };
        if open > close || rest[..open].contains(';') {
            continue;
        }
        let body: String = rest[open + 1..close]
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        let mut next: Option<i64> = Some(0);
        for item in body.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, e)) => (n.trim(), resolve(&v, e)),
                None => (item, next),
            };
            if let Some(x) = value {
                v.insert(name.to_string(), x);
            }
            next = value.map(|x| x + 1);
        }
        rest = &rest[close..];
    }
    v
}

#[test]
fn named_constants_are_the_header_values() {
    let Some(dir) = header_dir() else { return };
    let mut h = HashMap::new();
    for f in ["dnnl_common_types.h", "dnnl_types.h", "dnnl_config.h"] {
        let src = std::fs::read_to_string(dir.join(f)).unwrap();
        h.extend(values(&src));
    }
    let ours: &[(&str, i64)] = &[
        ("dnnl_success", status::SUCCESS.into()),
        ("dnnl_out_of_memory", status::OUT_OF_MEMORY.into()),
        ("dnnl_invalid_arguments", status::INVALID_ARGUMENTS.into()),
        ("dnnl_unimplemented", status::UNIMPLEMENTED.into()),
        ("DNNL_ARG_SRC", arg::SRC.into()),
        ("DNNL_ARG_SRC_1", arg::SRC_1.into()),
        ("DNNL_ARG_SRC_2", arg::SRC_2.into()),
        ("DNNL_ARG_SRC_3", arg::SRC_3.into()),
        ("DNNL_ARG_WEIGHTS_2", arg::WEIGHTS_2.into()),
        ("DNNL_ARG_WEIGHTS_3", arg::WEIGHTS_3.into()),
        ("DNNL_ARG_DIFF_SRC_2", arg::DIFF_SRC_2.into()),
        ("DNNL_ARG_DIFF_SRC_3", arg::DIFF_SRC_3.into()),
        ("DNNL_ARG_DIFF_DST_2", arg::DIFF_DST_2.into()),
        ("DNNL_ARG_DIFF_WEIGHTS_1", arg::DIFF_WEIGHTS_1.into()),
        ("DNNL_ARG_DIFF_WEIGHTS_2", arg::DIFF_WEIGHTS_2.into()),
        ("DNNL_ARG_DIFF_WEIGHTS_3", arg::DIFF_WEIGHTS_3.into()),
        (
            "dnnl_unidirectional_left2right",
            rnn_direction::LEFT2RIGHT.into(),
        ),
        (
            "dnnl_unidirectional_right2left",
            rnn_direction::RIGHT2LEFT.into(),
        ),
        (
            "dnnl_bidirectional_concat",
            rnn_direction::BIDIRECTIONAL_CONCAT.into(),
        ),
        (
            "dnnl_bidirectional_sum",
            rnn_direction::BIDIRECTIONAL_SUM.into(),
        ),
        ("DNNL_ARG_DST", arg::DST.into()),
        ("DNNL_ARG_DST_1", arg::DST_1.into()),
        ("DNNL_ARG_DST_2", arg::DST_2.into()),
        ("DNNL_ARG_WEIGHTS", arg::WEIGHTS.into()),
        ("DNNL_ARG_WEIGHTS_1", arg::WEIGHTS_1.into()),
        ("DNNL_ARG_BIAS", arg::BIAS.into()),
        ("DNNL_ARG_MEAN", arg::MEAN.into()),
        ("DNNL_ARG_VARIANCE", arg::VARIANCE.into()),
        ("DNNL_ARG_SCALE", arg::SCALE.into()),
        ("DNNL_ARG_SHIFT", arg::SHIFT.into()),
        ("DNNL_ARG_WORKSPACE", arg::WORKSPACE.into()),
        ("DNNL_ARG_SCRATCHPAD", arg::SCRATCHPAD.into()),
        ("DNNL_ARG_DIFF_SRC", arg::DIFF_SRC.into()),
        ("DNNL_ARG_DIFF_SRC_1", arg::DIFF_SRC_1.into()),
        ("DNNL_ARG_DIFF_DST", arg::DIFF_DST.into()),
        ("DNNL_ARG_DIFF_DST_1", arg::DIFF_DST_1.into()),
        ("DNNL_ARG_DIFF_WEIGHTS", arg::DIFF_WEIGHTS.into()),
        ("DNNL_ARG_DIFF_BIAS", arg::DIFF_BIAS.into()),
        ("DNNL_ARG_DIFF_SCALE", arg::DIFF_SCALE.into()),
        ("DNNL_ARG_DIFF_SHIFT", arg::DIFF_SHIFT.into()),
        ("DNNL_ARG_MULTIPLE_SRC", arg::MULTIPLE_SRC.into()),
        ("DNNL_ARG_ATTR_SCALES", arg::ATTR_SCALES.into()),
        ("DNNL_ARG_ATTR_ZERO_POINTS", arg::ATTR_ZERO_POINTS.into()),
        (
            "DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE",
            arg::ATTR_MULTIPLE_POST_OP_BASE.into(),
        ),
        ("dnnl_format_tag_any", api::FORMAT_TAG_ANY.into()),
        ("dnnl_blocked", api::FORMAT_KIND_BLOCKED.into()),
        ("DNNL_RUNTIME_SYCL", api::RUNTIME_SYCL.into()),
        ("dnnl_cpu", api::ENGINE_KIND_CPU.into()),
        ("dnnl_stream_in_order", api::STREAM_IN_ORDER.into()),
        (
            "dnnl_scratchpad_mode_user",
            api::SCRATCHPAD_MODE_USER.into(),
        ),
        ("dnnl_cpu_isa_avx2", cpu_isa::AVX2.into()),
        ("dnnl_cpu_isa_avx2_vnni", cpu_isa::AVX2_VNNI.into()),
        ("dnnl_cpu_isa_avx2_vnni_2", cpu_isa::AVX2_VNNI_2.into()),
        ("dnnl_cpu_isa_avx512_core", cpu_isa::AVX512_CORE.into()),
        (
            "dnnl_cpu_isa_avx512_core_vnni",
            cpu_isa::AVX512_CORE_VNNI.into(),
        ),
        (
            "dnnl_cpu_isa_avx512_core_bf16",
            cpu_isa::AVX512_CORE_BF16.into(),
        ),
        (
            "dnnl_cpu_isa_avx512_core_fp16",
            cpu_isa::AVX512_CORE_FP16.into(),
        ),
        (
            "dnnl_cpu_isa_avx512_core_amx",
            cpu_isa::AVX512_CORE_AMX.into(),
        ),
        ("dnnl_fpmath_mode_strict", fpmath::STRICT.into()),
        ("dnnl_fpmath_mode_bf16", fpmath::BF16.into()),
        ("dnnl_fpmath_mode_f16", fpmath::F16.into()),
        ("dnnl_fpmath_mode_any", fpmath::ANY.into()),
        ("dnnl_fpmath_mode_tf32", fpmath::TF32.into()),
        ("dnnl_query_impl_info_str", query::IMPL_INFO_STR.into()),
        ("dnnl_query_exec_arg_md", query::EXEC_ARG_MD.into()),
        ("dnnl_query_ndims_s32", query::NDIMS_S32.into()),
        ("dnnl_query_dims", query::DIMS.into()),
        ("dnnl_query_format_kind", query::FORMAT_KIND.into()),
        ("dnnl_query_inner_nblks_s32", query::INNER_NBLKS_S32.into()),
        ("dnnl_query_inner_blks", query::INNER_BLKS.into()),
        ("dnnl_query_inner_idxs", query::INNER_IDXS.into()),
        ("dnnl_query_strides", query::STRIDES.into()),
        ("dnnl_use_global_stats", norm_flags::USE_GLOBAL_STATS.into()),
        ("dnnl_use_scale", norm_flags::USE_SCALE.into()),
        ("dnnl_use_shift", norm_flags::USE_SHIFT.into()),
        ("dnnl_fuse_norm_relu", norm_flags::FUSE_NORM_RELU.into()),
        (
            "dnnl_fuse_norm_add_relu",
            norm_flags::FUSE_NORM_ADD_RELU.into(),
        ),
    ];
    let mut wrong = Vec::new();
    for (name, value) in ours {
        match h.get(*name) {
            Some(x) if x == value => {}
            other => wrong.push(format!("{name}: ours {value}, header {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The macro the post-op argument helper stands for: BASE * (idx + 1).
    assert_eq!(
        i64::from(arg::attr_multiple_post_op(2)),
        h["DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE"] * 3
    );
}

/// The parser itself, on a header-like text: implicit values, aliases, hex with suffixes.
#[test]
fn the_header_parser_reads_what_the_headers_use() {
    let v = values(
        "#define A_0 4 // four\n#define A A_0\n/* typedef enum { skipped_in_comment = 9 } */\n\
         typedef enum {\n  x_undef = 0, ///< doc\n  x_one,\n  x_flag = 0x10U,\n  x_next,\n  x_alias = x_one,\n} x_t;",
    );
    assert_eq!(v["A"], 4);
    assert_eq!(v["x_one"], 1);
    assert_eq!(v["x_flag"], 16);
    assert_eq!(v["x_next"], 17);
    assert_eq!(v["x_alias"], 1);
    assert!(!v.contains_key("skipped_in_comment"));
}
