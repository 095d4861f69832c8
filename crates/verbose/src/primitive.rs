//! The body of a primitive line (engine … problem descriptor) → [`Primitive`].

use crate::attr::parse_attrs;
use crate::memory::parse_mds;
use profilednn_model::{
    Attribute, Attributes, AuxItem, Engine, Primitive, PrimitiveKind, PropKind,
};
use thiserror::Error;

/// What the leading tokens of a line said about how to read its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Syntax {
    /// `v1` lines (oneDNN 3.6+) spell descriptors `arg:dt:…` instead of `arg_dt:…`.
    pub v1_descriptors: bool,
    /// Graph-API lines (component `graph`) describe partitions, not primitives.
    pub graph: bool,
}

/// A primitive body that could not be read, with what was expected.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum PrimitiveError {
    #[error("expected {expected} comma-separated fields ({layout}), found {found}")]
    FieldCount {
        expected: &'static str,
        layout: &'static str,
        found: usize,
    },
    #[error("expected the execution time (a number of ms) as the last field, found '{0}'")]
    Time(String),
    #[error(transparent)]
    MemoryDescriptor(#[from] crate::memory::MemoryDescError),
    #[error("empty primitive kind field")]
    EmptyKind,
}

const LAYOUT_CURRENT: &str = "engine,primitive,implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc";
const LAYOUT_GRAPH: &str = "engine,partition_id,partition_kind,op_names,data_formats,logical_tensors,fpmath_mode,[implementation,]backend";

/// Parses the fields between the operation and the time.
///
/// The generation is recognised from the field count, which is unambiguous: 8 fields since
/// DNNL 1.1, 7 in MKL-DNN 1.0 (no attributes), 6 in MKL-DNN 0.x (no engine, no attributes).
/// `timed` is false when the line's last field was not a number; then the body holds one field
/// too many if that field was a broken time, or exactly the right count for a line that was
/// printed without a time (asynchronous GPU executions in DNNL 1.x).
pub fn parse_primitive(
    body: &str,
    syntax: Syntax,
    timed: bool,
) -> Result<Primitive, PrimitiveError> {
    let fields: Vec<&str> = body.split(',').collect();
    if syntax.graph {
        return parse_graph(&fields, timed);
    }
    let n = fields.len();
    if !timed && !(6..=8).contains(&n) {
        let last = fields.last().copied().unwrap_or("");
        return Err(if n > 8 {
            PrimitiveError::Time(last.to_string())
        } else {
            field_count(n)
        });
    }
    // A broken time on a full line: one field too many.
    if !timed && n == 8 && looks_like_broken_time(fields[7]) && !looks_like_problem(fields[7]) {
        return Err(PrimitiveError::Time(fields[7].to_string()));
    }
    let (engine, f) = match n {
        8 | 7 => (Engine(fields[0].to_string()), &fields[1..]),
        6 => (Engine::cpu(), &fields[..]),
        _ => return Err(field_count(n)),
    };
    let has_attrs = n == 8;
    let kind_s = f[0];
    if kind_s.is_empty() {
        return Err(PrimitiveError::EmptyKind);
    }
    let mds =
        parse_mds(f[3], syntax.v1_descriptors, n == 6).map_err(PrimitiveError::MemoryDescriptor)?;
    let (attrs, aux, problem) = if has_attrs {
        (parse_attrs(f[4]), f[5], f[6])
    } else {
        (Attributes::default(), f[4], f[5])
    };
    Ok(Primitive {
        engine,
        kind: PrimitiveKind::parse(kind_s),
        implementation: f[1].to_string(),
        prop_kind: PropKind::parse(f[2]),
        mds,
        attrs,
        aux: parse_aux(aux),
        problem: problem.to_string(),
    })
}

fn field_count(found: usize) -> PrimitiveError {
    PrimitiveError::FieldCount {
        expected: "8 (6 for MKL-DNN 0.x, 7 for 1.0)",
        layout: LAYOUT_CURRENT,
        found,
    }
}

fn looks_like_broken_time(s: &str) -> bool {
    s.bytes()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == b'.' || c == b'-')
}

/// Problem descriptors start with a digit too (`64x1024`), so a digit-led last field is only a
/// broken time when it has no dimension separators.
fn looks_like_problem(s: &str) -> bool {
    s.contains('x')
        || s.contains(':')
        || s.contains('_')
        || s.starts_with("mb")
        || s.bytes().all(|c| c.is_ascii_digit())
}

pub fn parse_aux(field: &str) -> Vec<AuxItem> {
    field
        .split_ascii_whitespace()
        .map(|item| match item.split_once(':') {
            Some((k, v)) => AuxItem {
                key: k.to_string(),
                value: v.to_string(),
            },
            None => AuxItem {
                key: item.to_string(),
                value: String::new(),
            },
        })
        .collect()
}

/// `engine,partition_id,partition_kind,op_names,data_formats,logical_tensors,fpmath_mode,[impl,]backend`
///
/// oneDNN 3.13 adds `scratchpad:<user|library>:<bytes>` to exec lines, a field the template
/// line does not list: it is taken out by its name wherever it stands and kept as the aux item
/// `scratchpad`, so that the other fields keep their places.
fn parse_graph(fields: &[&str], _timed: bool) -> Result<Primitive, PrimitiveError> {
    let scratchpad = fields.iter().find(|f| f.starts_with("scratchpad:"));
    let named: Vec<&str>;
    let fields = match scratchpad {
        Some(_) => {
            named = fields
                .iter()
                .copied()
                .filter(|f| !f.starts_with("scratchpad:"))
                .collect();
            &named[..]
        }
        None => fields,
    };
    let n = fields.len();
    if !(8..=9).contains(&n) {
        return Err(PrimitiveError::FieldCount {
            expected: "8 or 9",
            layout: LAYOUT_GRAPH,
            found: n,
        });
    }
    let backend = fields[n - 1];
    let implementation = if n == 9 {
        format!("{}:{}", fields[7], backend)
    } else {
        backend.to_string()
    };
    let aux = vec![
        AuxItem {
            key: "partition_kind".into(),
            value: fields[2].to_string(),
        },
        AuxItem {
            key: "op_names".into(),
            value: fields[3].to_string(),
        },
        AuxItem {
            key: "data_formats".into(),
            value: fields[4].to_string(),
        },
    ];
    let mut aux = aux;
    if let Some(sp) = scratchpad {
        aux.push(AuxItem {
            key: "scratchpad".into(),
            value: sp["scratchpad:".len()..].to_string(),
        });
    }
    let mut attrs = Attributes::default();
    if !fields[6].is_empty() {
        attrs.items.push(Attribute::Fpmath {
            mode: fields[6].to_string(),
            apply_to_int: false,
        });
    }
    Ok(Primitive {
        engine: Engine(fields[0].to_string()),
        kind: PrimitiveKind::GraphPartition,
        implementation,
        prop_kind: PropKind::Undef,
        mds: Vec::new(),
        attrs,
        aux,
        problem: fields[5].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_model::DataType;

    const LEGACY: Syntax = Syntax {
        v1_descriptors: false,
        graph: false,
    };
    const V1: Syntax = Syntax {
        v1_descriptors: true,
        graph: false,
    };

    #[test]
    fn current_line() {
        let p = parse_primitive(
            "cpu,convolution,brg_conv_fwd:avx10_1_512_amx,forward_training,src:u8:a:blocked:acdb::f0 wei:s8:a:blocked:AcdB32a4b::f8:zpm1 bia:f32:a:blocked:a::f0 dst:s8:a:blocked:acdb::f0,attr-scales:wei:1:f32 attr-zero-points:src0:0:s32+dst:0:s32,alg:convolution_direct,mb2_ic64oc64_ih28oh28kh3sh1dh0ph1_iw28ow28kw3sw1dw0pw1",
            V1,
            true,
        )
        .unwrap();
        assert_eq!(p.kind, PrimitiveKind::Convolution);
        assert_eq!(p.implementation, "brg_conv_fwd:avx10_1_512_amx");
        assert_eq!(p.prop_kind, PropKind::ForwardTraining);
        assert_eq!(p.mds.len(), 4);
        assert_eq!(p.mds[1].flags, "f8:zpm1");
        assert_eq!(p.algorithm(), Some("convolution_direct"));
        assert_eq!(p.dtype_summary(), "u8:s8:f32");
        assert_eq!(p.attrs.items.len(), 2);
    }

    /// `md` is the listed descriptor (an `undef` bias included), `tensor` the first present one
    /// among a role's spellings, in listing order.
    #[test]
    fn descriptors_by_role() {
        let p = parse_primitive(
            "cpu,convolution,jit:avx512_core,backward_data,diff_src:f32::blocked:aBcd16b::f0 wei:f32::blocked:ABcd16b16a::f0 bia:undef::undef::: diff_dst:f32::blocked:aBcd16b::f0,,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1",
            V1,
            true,
        )
        .unwrap();
        assert_eq!(p.md("wei").unwrap().tag, "ABcd16b16a");
        assert!(p.md("bia").unwrap().is_absent());
        assert!(p.md("src").is_none());
        assert!(p.tensor(&["bia"]).is_none());
        // Listing order decides between spellings, not the order of `roles`.
        assert_eq!(p.tensor(&["diff_dst", "diff_src"]).unwrap().arg, "diff_src");
    }

    #[test]
    fn v1_0_and_v0_lines() {
        let p = parse_primitive(
            "cpu,eltwise,jit:avx512_common,forward_training,data_f32::blocked:aBcd16b:f0 diff_undef::undef::f0,alg:eltwise_relu:1:0,32x96x55x55",
            LEGACY,
            true,
        )
        .unwrap();
        assert_eq!(p.kind, PrimitiveKind::Eltwise);
        assert!(p.attrs.is_empty());
        assert_eq!(p.problem, "32x96x55x55");
        let p = parse_primitive(
            "convolution,jit:avx512_common,forward_training,fsrc:nchw fwei:Ohwi16o fbia:x fdst:nChw16c,alg:convolution_direct,mb32_ic3oc96_ih227oh55kh11sh4dh0ph0_iw227ow55kw11sw4dw0pw0",
            LEGACY,
            true,
        )
        .unwrap();
        assert_eq!(p.engine.as_str(), "cpu");
        assert_eq!(p.mds[0].data_type, DataType::F32);
        assert_eq!(p.mds[3].tag, "nChw16c");
    }

    #[test]
    fn unknown_kind_and_fields_are_kept() {
        let p = parse_primitive("cpu,warp_drive,jit:avx512_core,forward_training,src:f32::blocked:ab::f0,attr-new:1,speed:9,42x42", V1, true)
            .unwrap();
        assert_eq!(p.kind, PrimitiveKind::Other("warp_drive".into()));
        assert_eq!(p.aux_value("speed"), Some("9"));
        assert_eq!(p.exts_string(), "attr-new:1");
    }

    #[test]
    fn errors_say_what_was_expected() {
        let e = parse_primitive("cpu,convolution,jit", V1, true).unwrap_err();
        assert!(
            matches!(e, PrimitiveError::FieldCount { found: 3, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("engine,primitive,implementation"));
        let e = parse_primitive("cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,64x64,12.5ms", V1, false)
            .unwrap_err();
        assert_eq!(e, PrimitiveError::Time("12.5ms".into()));
        let e = parse_primitive(
            "cpu,reorder,jit:uni,undef,src:qq::blocked:ab::f0,,,64x64",
            V1,
            true,
        )
        .unwrap_err();
        assert!(matches!(e, PrimitiveError::MemoryDescriptor(_)));
    }

    #[test]
    fn untimed_gpu_line_is_a_primitive() {
        let p = parse_primitive(
            "gpu,convolution,ocl:gen9,forward_training,src_f32::blocked:abcd:f0 wei_f32::blocked:abcd:f0 bia_undef::undef::f0 dst_f32::blocked:abcd:f0,,alg:convolution_direct,mb1_ic3oc8_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1",
            LEGACY,
            false,
        )
        .unwrap();
        assert!(p.engine.is_gpu());
    }

    #[test]
    fn graph_partition() {
        let p = parse_primitive(
            "cpu,139,fused_op,conv+relu,data:NCX;filter:OIX,in0_f32:0:strided:undef:1x3x8x8:192s64s8s1 out0_f32:2:strided:undef:1x8x8x8:512s64s8s1,strict,larger_partition_kernel_t,dnnl_backend",
            Syntax { v1_descriptors: true, graph: true },
            true,
        )
        .unwrap();
        assert_eq!(p.kind, PrimitiveKind::GraphPartition);
        assert_eq!(p.implementation, "larger_partition_kernel_t:dnnl_backend");
        assert_eq!(p.aux_value("op_names"), Some("conv+relu"));
    }

    #[test]
    fn graph_scratchpad_field_is_matched_by_name() {
        let body = "cpu,139,fused_op,conv+relu,data:NCX;filter:OIX,in0_f32:0:strided:undef:1x3x8x8:192s64s8s1 out0_f32:2:strided:undef:1x8x8x8:512s64s8s1,strict,larger_partition_kernel_t,dnnl_backend";
        let syntax = Syntax {
            v1_descriptors: true,
            graph: true,
        };
        let plain = parse_primitive(body, syntax, true).unwrap();
        let with =
            parse_primitive(&format!("{body},scratchpad:library:4096"), syntax, true).unwrap();
        assert_eq!(with.aux_value("scratchpad"), Some("library:4096"));
        assert_eq!(with.implementation, plain.implementation);
        assert_eq!(with.problem, plain.problem);
        assert_eq!(with.aux_value("op_names"), plain.aux_value("op_names"));
    }
}
