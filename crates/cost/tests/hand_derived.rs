//! Operation and byte counts of every modelled kind, each derived by hand in the test from the
//! problem's dimensions (the formulas are the conventions stated in docs/cost-model.md).

use profilednn_cost::{cost, Cost, MathPrecision};
use profilednn_verbose::{parse_primitive, Syntax};

/// Cost of a 3.x (`v1`) line body: `kind,impl,prop,mds,attrs,aux,problem`.
fn try_cost(body: &str) -> Result<Cost, profilednn_cost::Unknown> {
    let syntax = Syntax {
        v1_descriptors: true,
        graph: false,
    };
    cost(&parse_primitive(&format!("cpu,{body}"), syntax, true).unwrap())
}

fn c(body: &str) -> Cost {
    try_cost(body).unwrap_or_else(|e| panic!("{body}: {e}"))
}

fn unknown(body: &str) -> String {
    try_cost(body).unwrap_err().reason
}

#[test]
fn convolution_bytes_per_direction() {
    // 1x1 conv, mb2 ic64 oc256 56x56, f32: src 2*64*56*56, wei 256*64, bia 256, dst 2*256*56*56.
    let (src, wei, bia, dst) = (2 * 64 * 56 * 56, 256 * 64, 256, 2 * 256 * 56 * 56);
    let shape = "mb2_ic64oc256_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0";
    let fwd = c(&format!("convolution,jit:avx512_core,forward_training,src:f32::blocked:aBcd16b::f0 wei:f32::blocked:ABcd16b16a::f0 bia:f32::blocked:a::f0 dst:f32::blocked:aBcd16b::f0,,alg:convolution_direct,{shape}"));
    assert_eq!(fwd.bytes, 4 * (src + wei + bia + dst));
    assert_eq!(fwd.flops, 2 * 2 * 256 * 64 * 56 * 56);
    assert_eq!(fwd.extra_flops, dst, "bias: one add per output");
    let bwd_d = c(&format!("convolution,jit:avx512_core,backward_data,src:f32::blocked:aBcd16b::f0 wei:f32::blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32::blocked:aBcd16b::f0,,alg:convolution_direct,{shape}"));
    assert_eq!(bwd_d.bytes, 4 * (src + wei + dst));
    assert_eq!(bwd_d.flops, fwd.flops);
    // bf16 data with f32 bias: half the bytes except the bias.
    let bf = c(&format!("convolution,brg:avx512_core_amx,forward_training,src:bf16::blocked:acdb::f0 wei:bf16::blocked:ABcd16b16a2b::f0 bia:f32::blocked:a::f0 dst:bf16::blocked:acdb::f0,attr-post-ops:eltwise_relu+sum:1,alg:convolution_direct,{shape}"));
    assert_eq!(
        bf.bytes,
        2 * (src + wei + dst) + 4 * bia + 2 * dst,
        "sum post-op reads dst"
    );
    assert_eq!(bf.extra_flops, dst + dst + 2 * dst, "bias + relu + sum");
    assert_eq!(bf.precision, MathPrecision::Bf16);
    assert_eq!(fwd.precision, MathPrecision::F32);
}

#[test]
fn matmul_bias_mask_binary_post_op_and_fpmath() {
    // 384x1024 * 1024x4096, bf16, f32 bias over N (mask 2), binary_add per-N f32 (mask 2).
    let m = c("matmul,brg:avx512_core_amx,undef,src:bf16:a:blocked:ab::f0 wei:bf16:a:blocked:BA16a32b2a::f0 bia:f32:a:blocked:ab::f0_mask2 dst:bf16:a:blocked:ab::f0,attr-post-ops:binary_add:f32:2,,384x1024:1024x4096");
    let (s, w, d) = (384 * 1024, 1024 * 4096, 384 * 4096);
    assert_eq!(m.flops, 2 * 384 * 4096 * 1024);
    assert_eq!(m.bytes, 2 * (s + w + d) + 4 * 4096 + 4 * 4096);
    assert_eq!(m.extra_flops, d + d);
    let f = c("matmul,brg:avx512_core,undef,src:f32:a:blocked:ab::f0 wei:f32:a:blocked:ab::f0 dst:f32:a:blocked:ab::f0,attr-fpmath:bf16,,128x768:768x3072");
    assert_eq!(
        f.precision,
        MathPrecision::Bf16,
        "fpmath:bf16 runs f32 tensors on bf16 units"
    );
    assert!(unknown("matmul,gemm:jit,undef,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,*x512:512x256").contains("run-time"));
}

#[test]
fn inner_product_bytes() {
    let ip = c("inner_product,brgemm:avx512_core,forward_training,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 bia:f32::blocked:a::f0 dst:f32::blocked:ab::f0,,,mb2ic2048oc1000");
    assert_eq!(ip.bytes, 4 * (2 * 2048 + 1000 * 2048 + 1000 + 2 * 1000));
}

#[test]
fn batch_norm_forward_and_backward() {
    let n = 8 * 16 * 32 * 32;
    let c_ = 16;
    // Training, scale and shift: read src, write dst, write mean+var, read scale+shift.
    let f = c("batch_normalization,bnorm_jit:avx512_core,forward_training,data:f32::blocked:aBcd16b::f0 diff:undef::undef:::,,flags:CH,mb8ic16ih32iw32");
    assert_eq!(f.bytes, 4 * (n + n + 2 * c_ + 2 * c_));
    assert_eq!(f.flops, 3 * n + 2 * n + 2 * n);
    // Inference with global stats: read stats instead of computing them.
    let i = c("batch_normalization,bnorm_jit:avx512_core,forward_inference,data:f32::blocked:aBcd16b::f0 diff:undef::undef:::,,flags:GCH,mb8ic16ih32iw32");
    assert_eq!(i.flops, 2 * n + 2 * n);
    assert_eq!(i.bytes, 4 * (n + n + 2 * c_ + 2 * c_));
    // Backward with scale-shift: read src, diff_dst, mean, var, scale; write diff_src and the
    // two parameter gradients.
    let b = c("batch_normalization,bnorm_jit:avx512_core,backward,data:bf16::blocked:acdb::f0 diff:bf16::blocked:acdb::f0,,flags:CH,mb8ic16ih32iw32");
    assert_eq!(b.bytes, 2 * (3 * n) + 4 * (2 * c_ + c_ + 2 * c_));
    assert_eq!(b.flops, 7 * n + n);
}

#[test]
fn layer_and_group_normalization() {
    // 8x384 rows of 1024: stats per row.
    let n = 8 * 384 * 1024;
    let rows = 8 * 384;
    let l = c("layer_normalization,jit:uni,forward_training,src:f32::blocked:abc::f0 dst:f32:a:blocked:abc::f0 stats:f32::blocked:ab::f0 scale:f32::blocked:a::f0 shift:f32::blocked:a::f0,,flags:CH,8x384x1024");
    assert_eq!(l.bytes, 4 * (2 * n + 2 * rows + 2 * 1024));
    let g = c("group_normalization,jit:uni,forward_training,src:f32::blocked:abcd::f0 dst:f32:a:blocked:abcd::f0,,flags:,g4mb2ic32ih16iw16");
    let gn = 2 * 32 * 16 * 16;
    assert_eq!(
        g.bytes,
        4 * (2 * gn + 2 * (2 * 4)),
        "stats per image and group"
    );
    assert_eq!(g.flops, 5 * gn);
}

#[test]
fn elementwise_kinds() {
    let n = 2 * 64 * 28 * 28;
    let e = c("eltwise,jit:avx512_core,forward_training,data:bf16::blocked:abcd::f0 diff:undef::undef:::,,alg:eltwise_relu alpha:0.1 beta:0,2x64x28x28");
    assert_eq!((e.flops, e.bytes), (n, 2 * 2 * n));
    let eb = c("eltwise,jit:avx512_core,backward_data,data:f32::blocked:abcd::f0 diff:f32:a:blocked:abcd::f0,,alg:eltwise_relu alpha:0 beta:0,2x64x28x28");
    assert_eq!((eb.flops, eb.bytes), (2 * n, 4 * 3 * n));
    // Broadcast add: read the full src0 and the per-channel src1, write the full dst.
    let b = c("binary,jit:uni,undef,src:f32::blocked:abcd::f0 src:f32:a:blocked:abcd::f0 dst:f32:a:blocked:abcd::f0,,alg:binary_add,2x64x56x56:1x64x1x1");
    let full = 2 * 64 * 56 * 56;
    assert_eq!((b.flops, b.bytes), (full, 4 * (full + 64 + full)));
    let s = c("sum,simple:any,undef,src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 dst:f32:a:blocked:abcd::f0,,,2x64x56x56");
    assert_eq!((s.flops, s.bytes), (2 * full, 4 * 4 * full));
    let pr = c("prelu,jit:uni,forward_training,data:f32::blocked:abcd::f0 wei:f32:a:blocked:abcd::f0,,,2x16x8x8:1x16x1x1");
    assert_eq!((pr.flops, pr.bytes), (2 * 2048, 4 * (2048 + 16 + 2048)));
}

#[test]
fn data_movement_has_no_flops() {
    let r = c(
        "reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:bf16::blocked:acdb::f0,,,10x32x16x16",
    );
    let n = 10 * 32 * 16 * 16;
    assert_eq!((r.flops, r.bytes), (0, 4 * n + 2 * n));
    let cc = c("concat,simple:any,undef,src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 src:f32::blocked:abcd::f0 dst:f32:a:blocked:abcd::f0,,axis:1,2x64x56x56:2x32x56x56:2x32x56x56");
    let total = 2 * 128 * 56 * 56;
    assert_eq!((cc.flops, cc.bytes), (0, 4 * 2 * total));
    let sh = c(
        "shuffle,jit:uni,forward_training,data:f32::blocked:abcd::f0,,axis:1 group:4,2x64x28x28",
    );
    assert_eq!(sh.bytes, 4 * 2 * 2 * 64 * 28 * 28);
}

#[test]
fn pooling_counts_valid_taps() {
    // Max 3x3 stride 2 no padding, 55 -> 27: every tap is inside: 27*27*9 taps per plane.
    let planes = 32 * 96;
    let f = c("pooling,jit:avx512_core,forward_training,src:f32::blocked:aBcd16b::f0 dst:f32::blocked:aBcd16b::f0 ws:u8::blocked:aBcd16b::f0,,alg:pooling_max,mb32ic96_ih55oh27kh3sh2dh0ph0_iw55ow27kw3sw2dw0pw0");
    assert_eq!(f.flops, planes * 27 * 27 * 9);
    assert_eq!(
        f.bytes,
        4 * planes * (55 * 55 + 27 * 27) + planes * 27 * 27,
        "u8 workspace"
    );
    // Average 2x2 stride 2 with padding 1 on a 4-wide input: windows see 1,2,1 taps per dim.
    let a = c("pooling,jit:uni,forward_inference,src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0,,alg:pooling_avg_exclude_padding,mb1ic1_ih4oh3kh2sh2dh0ph1_iw4ow3kw2sw2dw0pw1");
    assert_eq!(
        a.flops,
        4 * 4 + 9,
        "taps (1+2+1)^2 plus one divide per output"
    );
}

#[test]
fn softmax_resampling_reduction_lrn() {
    let s = c("softmax,jit:avx512_core,forward_training,src:f32::blocked:ab::f0 dst:f32:a:blocked:ab::f0,,alg:softmax_accurate axis:1,64x1000");
    assert_eq!((s.flops, s.bytes), (5 * 64000, 4 * 2 * 64000));
    let sb = c("softmax,jit:avx512_core,backward_data,src:bf16::blocked:ab::f0 dst:bf16::blocked:ab::f0 diff_dst:bf16::blocked:ab::f0,,alg:softmax_log axis:1,8x10");
    assert_eq!((sb.flops, sb.bytes), (4 * 80, 2 * 3 * 80));
    let r = c("resampling,simple:any,forward_training,src:f32::blocked:abcd::f0 dst:f32:a:blocked:abcd::f0,,alg:resampling_linear,mb2ic16_ih8oh16_iw8ow16");
    let (i, o) = (2 * 16 * 8 * 8, 2 * 16 * 16 * 16);
    assert_eq!((r.flops, r.bytes), (2 * 4 * o, 4 * (i + o)));
    let red = c("reduction,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32:a:blocked:abcd::f0,,alg:reduction_mean p:2 eps:0,2x64x56x56:1x64x1x1");
    assert_eq!(
        (red.flops, red.bytes),
        (2 * 64 * 56 * 56 + 64, 4 * (2 * 64 * 56 * 56 + 64))
    );
    let l = c("lrn,jit:avx512_core,forward_training,data:f32::blocked:abcd::f0 diff:undef::undef:::,,alg:lrn_across_channels,mb2ic96ih55iw55ls5beta0.75");
    let n = 2 * 96 * 55 * 55;
    assert_eq!((l.flops, l.bytes), ((2 * 5 + 4) * n, 4 * 2 * n));
}

#[test]
fn rnn_bytes_from_listed_tensors() {
    // LSTM l1 t10 mb8 sic=slc=dhc=dic=64, unidirectional, bf16 except the f32 peephole.
    let r = c("rnn,brgemm:avx512_core_amx,forward_inference,src_layer:bf16:a:blocked:abc::f0 src_iter:bf16::blocked:abcd::f0 wei_layer:bf16:a:blocked:abdEC64e2c::f0 wei_iter:bf16:a:blocked:abdEC64e2c::f0 wei_peephole:f32::blocked:abcd::f0 bias:bf16:a:blocked:abcd::f0 dst_layer:bf16:a:blocked:abc::f0 dst_iter:bf16::blocked:abcd::f0,,alg:vanilla_lstm direction:unidirectional_left2right activation:undef flags:,l1t10mb8sic64slc64dhc64dic64");
    let bf16 = 10 * 8 * 64 + 8 * 64 + 64 * 4 * 64 * 2 + 4 * 64 + 10 * 8 * 64 + 8 * 64;
    assert_eq!(r.bytes, 2 * bf16 + 4 * 3 * 64);
    assert_eq!(r.flops, 2 * 4 * 64 * 8 * 128 * 10);
}

#[test]
fn unmodelled_kinds_are_unknown_not_guessed() {
    assert!(
        unknown("zero_pad,ref,undef,src:f32::blocked:aBcd16b::f0,,,2x3x4x4")
            .contains("no cost model")
    );
    assert!(unknown("convolution,jit,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0,,,2x3x4x4").contains("not recognised"));
}
