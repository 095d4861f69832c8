//! Structure-aware: plausible verbose lines built from fuzzed fields (kinds, memory
//! descriptors, attributes, huge and zero dimensions, odd times) through the parser, the
//! profile, the cost model and the report JSON.
#![no_main]

#[path = "common.rs"]
mod common;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

const KINDS: &[&str] = &[
    "convolution",
    "deconvolution",
    "inner_product",
    "matmul",
    "gemm",
    "rnn",
    "batch_normalization",
    "layer_normalization",
    "group_normalization",
    "eltwise",
    "binary",
    "sum",
    "prelu",
    "reorder",
    "concat",
    "shuffle",
    "pooling",
    "softmax",
    "logsoftmax",
    "resampling",
    "reduction",
    "lrn",
    "sdpa",
    "zero_pad",
];
const PROPS: &[&str] = &[
    "forward_training",
    "forward_inference",
    "backward",
    "backward_data",
    "backward_weights",
    "undef",
    "forward",
];
const ARGS: &[&str] = &[
    "src",
    "wei",
    "bia",
    "dst",
    "data",
    "diff",
    "diff_src",
    "diff_dst",
    "diff_wei",
    "ws",
    "src_layer",
    "src_iter",
    "src_iter_c",
    "wei_layer",
    "wei_iter",
    "wei_proj",
    "bias",
    "dst_layer",
    "dst_iter",
    "in",
    "out",
    "scale",
    "shift",
];
const TYPES: &[&str] = &[
    "f32", "bf16", "f16", "s8", "u8", "s32", "f64", "s4", "u4", "f8_e5m2", "undef", "",
];
const TAGS: &[&str] = &[
    "abcd",
    "acdb",
    "aBcd16b",
    "ab",
    "ba",
    "a",
    "abc",
    "ABcd16b16a",
    "any",
    "",
];
const ATTRS: &[&str] = &[
    "attr-post-ops:eltwise_relu",
    "attr-post-ops:sum+eltwise_gelu_erf",
    "attr-post-ops:binary_add:f32:2",
    "attr-post-ops:binary_mul:bf16:15+prelu",
    "attr-post-ops:binary_add:f32:99999999999999999999",
    "attr-fpmath:bf16",
    "attr-scales:src0:0:f32+wei:1:f32",
    "attr-zero-points:src0:0:s32",
    "attr-scratchpad:user",
    "",
];
const AUX: &[&str] = &[
    "alg:convolution_direct",
    "alg:eltwise_relu",
    "alg:binary_add",
    "alg:pooling_max",
    "alg:pooling_avg_include_padding",
    "alg:resampling_linear",
    "alg:resampling_nearest",
    "alg:reduction_mean p:2 eps:0",
    "alg:reduction_norm_lp_sum p:2 eps:0",
    "alg:lrn_within_channel",
    "alg:lrn_across_channels",
    "alg:softmax_accurate axis:1",
    "alg:vanilla_lstm direction:bidirectional_concat",
    "alg:lbr_gru direction:unidirectional",
    "alg:vanilla_rnn_bidirectional_sum",
    "flags:CH",
    "flags:GCHR",
    "flags:M",
    "flags:3",
    "axis:1 group:4",
    "axis:1",
    "",
];
const DESC_KEYS: &[&str] = &[
    "g", "mb", "ic", "oc", "id", "ih", "iw", "od", "oh", "ow", "kd", "kh", "kw", "sd", "sh", "sw",
    "dd", "dh", "dw", "pd", "ph", "pw", "l", "t", "sic", "slc", "dhc", "dic", "dlc", "ls", "m",
    "n", "k",
];

#[derive(Arbitrary, Debug)]
enum Dim {
    Small(u8),
    Zero,
    Huge(u64),
    Pow2(u8),
    Star,
}

impl Dim {
    fn text(&self) -> String {
        match self {
            Dim::Small(v) => v.to_string(),
            Dim::Zero => "0".into(),
            Dim::Huge(v) => v.to_string(),
            Dim::Pow2(e) => (1u128 << (e % 100)).to_string(),
            Dim::Star => "*".into(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Problem {
    /// `mb2_ic3oc64_ih224…`: letter-number pairs.
    Desc(Vec<(u8, Dim, bool)>),
    /// `2x64x56x56:1x64x1x1`.
    Dims(Vec<Vec<Dim>>, Option<Vec<Dim>>),
    /// Whatever else.
    Raw(String),
}

impl Problem {
    fn text(&self) -> String {
        match self {
            Problem::Desc(pairs) => pairs
                .iter()
                .take(24)
                .map(|(k, v, sep)| {
                    let key = DESC_KEYS[*k as usize % DESC_KEYS.len()];
                    format!("{key}{}{}", v.text(), if *sep { "_" } else { "" })
                })
                .collect(),
            Problem::Dims(tensors, extra) => {
                let t = |d: &Vec<Dim>| {
                    d.iter()
                        .take(8)
                        .map(Dim::text)
                        .collect::<Vec<_>>()
                        .join("x")
                };
                let mut s = tensors.iter().take(4).map(t).collect::<Vec<_>>().join(":");
                if let Some(e) = extra {
                    s.push(' ');
                    s.push_str(&t(e));
                }
                s
            }
            Problem::Raw(s) => s.replace('\n', " "),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Md {
    arg: u8,
    dt: u8,
    tag: u8,
    flags: Option<u16>,
}

#[derive(Arbitrary, Debug)]
enum Time {
    Ms(u32, u16),
    Exp(u8, i16),
    Zero,
    Huge,
    Negative,
    Nan,
    Missing,
    Raw(String),
}

impl Time {
    fn text(&self) -> String {
        match self {
            Time::Ms(a, b) => format!("{a}.{b}"),
            Time::Exp(m, e) => format!("{m}e{e}"),
            Time::Zero => "0".into(),
            Time::Huge => "1e300".into(),
            Time::Negative => "-1.5".into(),
            Time::Nan => "nan".into(),
            Time::Missing => String::new(),
            Time::Raw(s) => s.replace([',', '\n'], ""),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct FuzzLine {
    /// 0: `onednn_verbose,v1,primitive,exec,cpu,…`; 1: `dnnl_verbose,exec,cpu,…`; 2: timestamped;
    /// 3: `mkldnn_verbose,exec,…` (0.x); 4: 0 behind spdlog's prefix (oneDNN's file logger);
    /// 5: a graph exec line with 3.13's `scratchpad:` field.
    header: u8,
    create: bool,
    kind: u8,
    imp: u8,
    prop: u8,
    mds: Vec<Md>,
    attr: u8,
    aux: u8,
    problem: Problem,
    time: Time,
    repeat: u8,
}

impl FuzzLine {
    fn text(&self) -> String {
        let op = if self.create {
            "create:cache_miss"
        } else {
            "exec"
        };
        let head = match self.header % 6 {
            0 => format!("onednn_verbose,v1,primitive,{op},cpu"),
            1 => format!(
                "dnnl_verbose,{},cpu",
                if self.create { "create" } else { "exec" }
            ),
            2 => format!(
                "onednn_verbose,1700000000000.{},primitive,{op},cpu",
                self.imp
            ),
            3 => format!(
                "mkldnn_verbose,{}",
                if self.create { "create" } else { "exec" }
            ),
            4 => format!(
                "[2026-04-02 10:15:32.123] [oneDNN] [info] onednn_verbose,v1,primitive,{op},cpu"
            ),
            _ => "onednn_verbose,v1,graph,exec,cpu".to_string(),
        };
        let kind = KINDS[self.kind as usize % KINDS.len()];
        let imp = [
            "jit:avx512_core",
            "ref:any",
            "brg:avx512_core_amx",
            "gemm:jit",
            "simple:any",
            "zen:matmul:f32|bf16:amd",
            "brg_matmul:avx10_2_512_amx_2",
        ][self.imp as usize % 7];
        let prop = PROPS[self.prop as usize % PROPS.len()];
        let mds = self
            .mds
            .iter()
            .take(8)
            .map(|m| {
                let flags = m
                    .flags
                    .map(|f| format!("f0_mask{f}"))
                    .unwrap_or_else(|| "f0".into());
                format!(
                    "{}:{}::blocked:{}::{flags}",
                    ARGS[m.arg as usize % ARGS.len()],
                    TYPES[m.dt as usize % TYPES.len()],
                    TAGS[m.tag as usize % TAGS.len()]
                )
            })
            .collect::<Vec<_>>()
            .join(" ");
        let attr = ATTRS[self.attr as usize % ATTRS.len()];
        let aux = AUX[self.aux as usize % AUX.len()];
        if self.header % 6 == 5 {
            // engine,partition_id,partition_kind,op_names,data_formats,logical_tensors,
            // fpmath_mode,implementation,backend, then the scratchpad by name.
            return format!(
                "{head},{},fused_op,{kind},,{mds},fpm:strict,{imp},dnnl_backend,scratchpad:library:{},{}",
                self.kind,
                self.problem.text().replace(',', ""),
                self.time.text()
            );
        }
        format!(
            "{head},{kind},{imp},{prop},{mds},{attr},{aux},{},{}",
            self.problem.text(),
            self.time.text()
        )
    }
}

fuzz_target!(|lines: Vec<FuzzLine>| {
    let mut log = String::new();
    for l in lines.iter().take(32) {
        let text = l.text();
        for _ in 0..=(l.repeat % 4) {
            log.push_str(&text);
            log.push('\n');
        }
    }
    let profile = common::profile_of(log.as_bytes());
    common::reports(&profile, Some(common::machine()));
});
