//! No count wraps: problem dimensions up to 2^40 for every kind the cost model knows, compared
//! with a reference formula derived by hand here, in 128-bit arithmetic. The model's answer is
//! the exact count when it fits 64 bits, and `Unknown` ("too large to count") otherwise.

use profilednn_cost::{cost, Cost, Unknown};
use profilednn_verbose::{parse_primitive, Syntax};
use proptest::prelude::*;

fn run(body: &str) -> Result<Cost, Unknown> {
    let syntax = Syntax {
        v1_descriptors: true,
        graph: false,
    };
    let p = parse_primitive(&format!("cpu,{body}"), syntax, true)
        .unwrap_or_else(|e| panic!("{body}: {e:?}"));
    cost(&p)
}

/// Exact product in 128 bits; `None` when the true value does not fit (zero wins).
fn prod(xs: &[u64]) -> Option<u128> {
    if xs.contains(&0) {
        return Some(0);
    }
    xs.iter()
        .try_fold(1u128, |acc, &x| acc.checked_mul(x as u128))
}

/// Sum of exact terms; `None` when one does not fit or the sum does not.
fn sum(xs: &[Option<u128>]) -> Option<u128> {
    xs.iter().try_fold(0u128, |acc, x| acc.checked_add((*x)?))
}

fn times(k: u128, x: Option<u128>) -> Option<u128> {
    x?.checked_mul(k)
}

/// What the model must say: flops, extra flops and bits of the reference, each `None` when it
/// does not fit 128 bits.
struct Expect {
    flops: Option<u128>,
    extra: Option<u128>,
    bits: Option<u128>,
}

fn check(body: &str, e: Expect) -> Result<(), TestCaseError> {
    let fits = |x: Option<u128>| x.filter(|&v| v <= u64::MAX as u128);
    let bytes = e.bits.map(|b| b.div_ceil(8));
    let got = run(body);
    match (fits(e.flops), fits(e.extra), fits(bytes)) {
        (Some(f), Some(x), Some(b)) => {
            let c = got.map_err(|u| TestCaseError::fail(format!("{body}: unknown: {u}")))?;
            prop_assert_eq!(c.flops as u128, f, "flops of {}", body);
            prop_assert_eq!(c.extra_flops as u128, x, "extra flops of {}", body);
            prop_assert_eq!(c.bytes as u128, b, "bytes of {}", body);
        }
        _ => match got {
            Ok(c) => prop_assert!(false, "{body}: must be too large to count, got {c:?}"),
            Err(u) => prop_assert!(
                u.reason.starts_with("too large to count:")
                    && u.reason.ends_with("overflows 64 bits"),
                "{}: {}",
                body,
                u.reason
            ),
        },
    }
    Ok(())
}

/// Dimensions: mostly ordinary, often 0 or 1, sometimes up to 2^40.
fn dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => Just(0u64),
        2 => Just(1u64),
        4 => 2u64..4096,
        6 => 1u64..=(1u64 << 40),
    ]
}

const F32: &str = "f32::blocked:abcd::f0";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Dense (stride 1, no padding, no dilation): every output position sees `k` taps per
    /// dimension, `i = o + k - 1`. With groups, `ic = g * icg`.
    #[test]
    fn convolution(g in 1u64..5, mb in dim(), icg in dim(), oc in dim(), oh in dim(), ow in dim(),
                   kh in 1u64..=(1 << 40), kw in 1u64..8, bias: bool) {
        let (ic, ih, iw) = (g * icg, oh + kh - 1, ow + kw - 1);
        let oc = oc / g * g;
        let bia = if bias { format!(" bia:{F32}") } else { String::new() };
        let body = format!("convolution,jit,forward_training,src:{F32} wei:{F32}{bia} dst:{F32},,alg:convolution_direct,g{g}mb{mb}_ic{ic}oc{oc}_ih{ih}oh{oh}kh{kh}sh1dh0ph0_iw{iw}ow{ow}kw{kw}sw1dw0pw0");
        let bits = sum(&[
            prod(&[mb, ic, ih, iw]),
            prod(&[mb, oc, oh, ow]),
            prod(&[oc, icg, kh, kw]),
            if bias { Some(oc as u128) } else { Some(0) },
        ]);
        check(&body, Expect {
            flops: times(2, prod(&[mb, oc, icg, oh, kh, ow, kw])),
            extra: if bias { prod(&[mb, oc, oh, ow]) } else { Some(0) },
            bits: times(32, bits),
        })?;
    }

    /// Deconvolution swaps the roles: every input position feeds `k` outputs, `o = i + k - 1`.
    #[test]
    fn deconvolution(mb in dim(), ic in dim(), oc in dim(), ih in dim(), iw in dim(), kh in 1u64..=(1 << 40), kw in 1u64..8) {
        let (oh, ow) = (ih + kh - 1, iw + kw - 1);
        let body = format!("deconvolution,jit,backward_data,src:{F32} wei:{F32} dst:{F32},,alg:deconvolution_direct,mb{mb}_ic{ic}oc{oc}_ih{ih}oh{oh}kh{kh}sh1dh0ph0_iw{iw}ow{ow}kw{kw}sw1dw0pw0");
        check(&body, Expect {
            flops: times(2, prod(&[mb, oc, ic, ih, kh, iw, kw])),
            extra: Some(0),
            bits: times(32, sum(&[prod(&[mb, ic, ih, iw]), prod(&[mb, oc, oh, ow]), prod(&[oc, ic, kh, kw])])),
        })?;
    }

    #[test]
    fn inner_product(mb in dim(), ic in dim(), ih in dim(), iw in dim(), oc in dim()) {
        let body = format!("inner_product,jit,forward_training,src:{F32} wei:{F32} bia:{F32} dst:{F32},attr-post-ops:eltwise_relu,,mb{mb}ic{ic}ih{ih}iw{iw}oc{oc}");
        check(&body, Expect {
            flops: times(2, prod(&[mb, oc, ic, ih, iw])),
            // bias add and relu: one each per output
            extra: times(2, prod(&[mb, oc])),
            bits: times(32, sum(&[prod(&[mb, ic, ih, iw]), prod(&[oc, ic, ih, iw]), prod(&[mb, oc]), Some(oc as u128)])),
        })?;
    }

    #[test]
    fn matmul(b in dim(), m in dim(), k in dim(), n in dim()) {
        let body = format!("matmul,brg,undef,src:{F32} wei:{F32} dst:{F32},attr-post-ops:sum,,{b}x{m}x{k}:{b}x{k}x{n}");
        let dst = prod(&[b, m, n]);
        check(&body, Expect {
            flops: times(2, prod(&[b, m, n, k])),
            // the sum post-op: a multiply-add per output, reading the destination
            extra: times(2, dst),
            bits: times(32, sum(&[prod(&[b, m, k]), prod(&[b, k, n]), dst, dst])),
        })?;
    }

    #[test]
    fn gemm(m in dim(), n in dim(), k in dim()) {
        let body = format!("gemm,jit,undef,,,,m{m}n{n}k{k}_lda{k}ldb{n}ldc{n} trans:NN a_dt:f32 b_dt:f32 c_dt:f32 acc_dt:f32");
        check(&body, Expect {
            flops: times(2, prod(&[m, n, k])),
            extra: Some(0),
            bits: times(32, sum(&[prod(&[m, k]), prod(&[k, n]), prod(&[m, n])])),
        })?;
    }

    /// LSTM (4 gates), one direction: `2 * 4 * dhc * mb * (sic + slc)` per cell, `l * t` cells.
    #[test]
    fn rnn(l in dim(), t in dim(), mb in dim(), sic in dim(), slc in dim(), dhc in dim(), backward: bool) {
        let prop = if backward { "backward" } else { "forward_training" };
        let body = format!("rnn,ref,{prop},src_layer:f32::blocked:abc::f0 dst_layer:f32::blocked:abc::f0,,alg:vanilla_lstm direction:unidirectional_left2right,l{l}t{t}mb{mb}sic{sic}slc{slc}dhc{dhc}dic{dhc}");
        let ins = (sic as u128).checked_add(slc as u128);
        let flops = prod(&[l, t, mb, dhc]).and_then(|x| if x == 0 { Some(0) } else { x.checked_mul(ins?) });
        check(&body, Expect {
            flops: times(if backward { 16 } else { 8 }, flops),
            extra: Some(0),
            bits: times(32, sum(&[prod(&[t, mb, slc]), prod(&[t, mb, dhc])])),
        })?;
    }

    /// Max pooling, dense windows: one compare per tap.
    #[test]
    fn pooling(mb in dim(), ic in dim(), oh in dim(), ow in dim(), kh in 1u64..=(1 << 40), kw in 1u64..8) {
        let (ih, iw) = (oh + kh - 1, ow + kw - 1);
        let body = format!("pooling,jit,forward_inference,src:{F32} dst:{F32},,alg:pooling_max,mb{mb}ic{ic}_ih{ih}oh{oh}kh{kh}sh1dh0ph0_iw{iw}ow{ow}kw{kw}sw1dw0pw0");
        check(&body, Expect {
            flops: prod(&[mb, ic, oh, kh, ow, kw]),
            extra: Some(0),
            bits: times(32, sum(&[prod(&[mb, ic, ih, iw]), prod(&[mb, ic, oh, ow])])),
        })?;
    }

    /// Batch norm, inference, computing its statistics, scale and shift: 7 ops per element;
    /// reads src and scale+shift, writes dst.
    #[test]
    fn batch_norm(mb in dim(), ic in dim(), ih in dim(), iw in dim()) {
        let body = format!("batch_normalization,jit,forward_inference,data:{F32},,flags:CH,mb{mb}ic{ic}ih{ih}iw{iw}");
        let n = prod(&[mb, ic, ih, iw]);
        check(&body, Expect {
            flops: times(7, n),
            extra: Some(0),
            bits: times(32, sum(&[n, n, times(2, Some(ic as u128))])),
        })?;
    }

    /// Layer norm, training: also writes mean and variance, one per row.
    #[test]
    fn layer_norm(a in dim(), b in dim(), c in dim()) {
        let body = format!("layer_normalization,jit,forward_training,src:{F32} dst:{F32},,flags:CH,{a}x{b}x{c}");
        let n = prod(&[a, b, c]);
        let rows = if c == 0 { Some(0) } else { prod(&[a, b]) };
        check(&body, Expect {
            flops: times(7, n),
            extra: Some(0),
            bits: times(32, sum(&[n, n, times(2, rows), times(2, Some(c as u128))])),
        })?;
    }

    /// Group norm, inference without scale or shift: 5 ops per element.
    #[test]
    fn group_norm(g in dim(), mb in dim(), ic in dim(), ih in dim(), iw in dim()) {
        let body = format!("group_normalization,jit,forward_inference,src:{F32} dst:{F32},,flags:,g{g}mb{mb}ic{ic}ih{ih}iw{iw}");
        let n = prod(&[mb, ic, ih, iw]);
        check(&body, Expect { flops: times(5, n), extra: Some(0), bits: times(64, n) })?;
    }

    #[test]
    fn element_wise(a in dim(), b in dim(), c in dim()) {
        let n = prod(&[a, b, c]);
        check(&format!("eltwise,jit,forward_training,data:{F32},,alg:eltwise_relu,{a}x{b}x{c}"),
              Expect { flops: n, extra: Some(0), bits: times(64, n) })?;
        check(&format!("eltwise,jit,backward_data,data:{F32} diff:{F32},,alg:eltwise_relu,{a}x{b}x{c}"),
              Expect { flops: times(2, n), extra: Some(0), bits: times(96, n) })?;
        check(&format!("softmax,jit,forward_training,src:{F32} dst:{F32},,alg:softmax_accurate axis:1,{a}x{b}x{c}"),
              Expect { flops: times(5, n), extra: Some(0), bits: times(64, n) })?;
        check(&format!("sum,simple,undef,src:{F32} src:{F32} src:{F32} dst:{F32},,,{a}x{b}x{c}"),
              Expect { flops: times(2, n), extra: Some(0), bits: times(128, n) })?;
        check(&format!("shuffle,ref,forward_training,data:{F32},,axis:1 group:4,{a}x{b}x{c}"),
              Expect { flops: Some(0), extra: Some(0), bits: times(64, n) })?;
        // f32 to bf16: 32 + 16 bits per element
        check(&format!("reorder,simple,undef,src:{F32} dst:bf16::blocked:abcd::f0,,,{a}x{b}x{c}"),
              Expect { flops: Some(0), extra: Some(0), bits: times(48, n) })?;
    }

    /// Binary with a broadcast second source (`1xbxc`), prelu with per-channel weights.
    #[test]
    fn binary_and_prelu(a in dim(), b in dim(), c in dim()) {
        let n = prod(&[a, b, c]);
        let w = prod(&[b, c]);
        check(&format!("binary,jit,undef,src:{F32} src:{F32} dst:{F32},,alg:binary_add,{a}x{b}x{c}:1x{b}x{c}"),
              Expect { flops: n, extra: Some(0), bits: times(32, sum(&[n, w, n])) })?;
        check(&format!("prelu,jit,forward_training,data:{F32} wei:{F32},,,{a}x{b}x{c}:1x{b}x{c}"),
              Expect { flops: times(2, n), extra: Some(0), bits: times(32, sum(&[n, w, n])) })?;
    }

    #[test]
    fn concat(a in dim(), b in dim(), c in dim(), d in dim()) {
        let x = prod(&[a, b, d]);
        let y = prod(&[a, c, d]);
        check(&format!("concat,simple,undef,src:{F32} src:{F32} dst:{F32},,axis:1,{a}x{b}x{d}:{a}x{c}x{d}"),
              Expect { flops: Some(0), extra: Some(0), bits: times(64, sum(&[x, y])) })?;
    }

    /// Linear resampling in 2-D: 4 taps per output, a multiply-add each.
    #[test]
    fn resampling(mb in dim(), ic in dim(), ih in dim(), oh in dim(), iw in dim(), ow in dim()) {
        let body = format!("resampling,jit,forward_training,src:{F32} dst:{F32},,alg:resampling_linear,mb{mb}ic{ic}_ih{ih}oh{oh}_iw{iw}ow{ow}");
        check(&body, Expect {
            flops: times(8, prod(&[mb, ic, oh, ow])),
            extra: Some(0),
            bits: times(32, sum(&[prod(&[mb, ic, ih, iw]), prod(&[mb, ic, oh, ow])])),
        })?;
    }

    /// Mean over the last two dims: one add per source element, one divide per output.
    #[test]
    fn reduction(a in dim(), b in dim(), c in dim()) {
        let src = prod(&[a, b, c]);
        let dst = Some(a as u128);
        check(&format!("reduction,jit,undef,src:{F32} dst:{F32},,alg:reduction_mean p:2 eps:0,{a}x{b}x{c}:{a}x1x1"),
              Expect { flops: sum(&[src, dst]), extra: Some(0), bits: times(32, sum(&[src, dst])) })?;
    }

    /// Across channels, window `ls`: `(2 ls + 4)` per element.
    #[test]
    fn lrn(mb in dim(), ic in dim(), ih in dim(), iw in dim(), ls in dim()) {
        let n = prod(&[mb, ic, ih, iw]);
        let per = (ls as u128) * 2 + 4;
        check(&format!("lrn,jit,forward_training,data:{F32},,alg:lrn_across_channels,mb{mb}ic{ic}ih{ih}iw{iw}ls{ls}beta0.75"),
              Expect { flops: times(per, n), extra: Some(0), bits: times(64, n) })?;
    }
}

/// The line of issue 17: `2 * 2^20 * 2^20 * 2^20 * 2^20 = 2^81` flops wrapped to 0 and the
/// bytes to 9.22e18 before; now it is too large to count.
#[test]
fn a_huge_inner_product_is_uncosted_not_wrapped() {
    let body = format!(
        "inner_product,jit,forward_training,src:{F32} wei:{F32} dst:{F32},,,mb1048576ic1048576ih1024iw1024oc1048576"
    );
    let u = run(&body).unwrap_err();
    assert_eq!(
        u.reason,
        "too large to count: the operation count overflows 64 bits"
    );
}

/// A 2^40-wide kernel was counted by looping over every output and tap (days); now in closed
/// form: a "full" convolution (padding k-1) sees every input position under every tap.
#[test]
fn a_huge_kernel_is_counted_without_looping() {
    let k = 1u64 << 40;
    let (ih, oh, ph) = (k, 2 * k - 1, k - 1);
    let c = run(&format!("convolution,jit,forward_training,src:{F32} wei:{F32} dst:{F32},,alg:convolution_direct,mb1_ic1oc1_ih{ih}oh{oh}kh{k}sh1dh0ph{ph}_iw1ow1kw1sw1dw0pw0")).unwrap_err();
    assert_eq!(
        c.reason, "too large to count: the operation count overflows 64 bits",
        "2 * 2^40 * 2^40 taps"
    );
    let small = 1u64 << 20;
    let c = run(&format!("convolution,jit,forward_training,src:{F32} wei:{F32} dst:{F32},,alg:convolution_direct,mb1_ic1oc1_ih{small}oh{}kh{small}sh1dh0ph{}_iw1ow1kw1sw1dw0pw0", 2 * small - 1, small - 1)).unwrap();
    assert_eq!(c.flops, 2 * small * small);
}

/// Tensors of more than 64 dimensions: bias and post-op masks and the linear-resampling tap
/// count used to shift past 64 bits.
#[test]
fn more_than_64_dimensions_do_not_overflow_a_shift() {
    let dims = vec!["1"; 70].join("x");
    let m = run(&format!("matmul,brg,undef,src:{F32} wei:{F32} bia:{F32} dst:{F32},attr-post-ops:binary_add:f32:3,,{dims}:{dims}")).unwrap();
    assert_eq!(m.flops, 2);
    let r = run(&format!(
        "resampling,ref,forward_training,src:{F32} dst:{F32},,alg:resampling_linear,{dims} {dims}"
    ))
    .unwrap_err();
    assert!(r.reason.starts_with("too large to count"), "{}", r.reason);
}

/// A destination of another rank than its sources used to index below zero.
#[test]
fn a_matmul_destination_of_another_rank_is_unknown() {
    let u = run(&format!(
        "matmul,brg,undef,src:{F32} wei:{F32} dst:{F32},,,3x4x5:1x5x6:6"
    ))
    .unwrap_err();
    assert!(u.reason.contains("DST rank"), "{}", u.reason);
}
