//! `--batch N`: the mini-batch of every problem of the iteration set to N. Weights do not
//! depend on the mini-batch; activations scale with it.
//!
//! The logged mini-batch is the `mb` of the iteration's convolutions and inner products (the
//! most common one). Letter-style problems (`mb8_ic64oc64…`, `mb8ic64ih16iw16`) get `mbN`;
//! dimension-style ones (`8x64x16x16`, reorders, element-wise, matmul) get every activation
//! dimension that is a multiple of the logged mini-batch in its first place (matmul: `M`, or
//! `K` of the weight-gradient form) scaled by N/mb — reorders of weights are left alone.
//! Arithmetic is checked: a mini-batch that would overflow is an error, never a wrap.

use super::roles::{is_compute, reorder_is_weights};
use super::{TransformError, Transformed};
use profilednn_cost::Descriptor;
use profilednn_model::{Primitive, PrimitiveKind as K};
use std::collections::BTreeMap;
use std::sync::Arc;

const NAME: &str = "--batch";

/// A problem whose mini-batch cannot be rescaled. The messages end up in the transform's error
/// (which names the call), so they say what in the problem text stopped the rescale.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScaleError {
    #[error("mini-batch {n}: dimension {d} × {n} overflows 64 bits")]
    Overflow { d: u64, n: u64 },
    #[error("dimension not a number")]
    NotANumber,
    #[error("no dimension of '{problem}' is a multiple of the logged mini-batch {from}")]
    NoMultiple { problem: String, from: u64 },
    #[error("mini-batch '{0}' is not a 64-bit number")]
    MbNotANumber(String),
    #[error("mini-batch {v} is not a multiple of the logged {from}")]
    MbNotMultiple { v: u64, from: u64 },
}

/// The mini-batch the iteration was logged with.
pub fn logged_batch(calls: &[&Primitive]) -> Option<u64> {
    let mut n: BTreeMap<u64, usize> = BTreeMap::new();
    for p in calls.iter().filter(|p| is_compute(p)) {
        if let Some(mb) = Descriptor::parse(&p.problem).and_then(|d| d.get("mb")) {
            *n.entry(mb).or_default() += 1;
        }
    }
    n.into_iter()
        .max_by_key(|(mb, c)| (*c, *mb))
        .map(|(mb, _)| mb)
}

pub fn apply(t: &mut Transformed, n: u64) -> Result<(), TransformError> {
    let refs: Vec<&Primitive> = t.calls.iter().map(|c| &*c.primitive).collect();
    let Some(from) = logged_batch(&refs) else {
        return Err(TransformError {
            transform: NAME,
            position: 0,
            kind: String::new(),
            problem: String::new(),
            what: "no convolution, deconvolution, inner product or matmul with an `mb` in the iteration: the logged mini-batch is unknown".into(),
        });
    };
    if n == 0 {
        return Err(TransformError::at(
            NAME,
            0,
            refs[0],
            "the mini-batch must be at least 1".into(),
        ));
    }
    let weights: Vec<bool> = (0..refs.len())
        .map(|i| refs[i].kind.family() == K::Reorder && reorder_is_weights(&refs, i))
        .collect();
    let mut out = Vec::with_capacity(t.calls.len());
    for (i, c) in t.calls.iter().enumerate() {
        let p = &c.primitive;
        let problem = if weights[i] {
            p.problem.clone()
        } else {
            scale_problem(p, from, n).map_err(|e| TransformError::at(NAME, i, p, e.to_string()))?
        };
        let mut q = (**p).clone();
        q.problem = problem;
        out.push(Arc::new(q));
    }
    for (c, p) in t.calls.iter_mut().zip(out) {
        c.primitive = p;
    }
    t.assumptions.push(format!(
        "--batch {n}: mini-batch {from} (the iteration's convolutions/inner products) set to {n} in every problem; \
         activations scale with it, weights and their reorders do not; the work per sample and the call sequence stay as logged"
    ));
    Ok(())
}

/// `d × n / from`, checked.
fn scale(d: u64, from: u64, n: u64) -> Result<u64, ScaleError> {
    d.checked_mul(n)
        .map(|x| x / from)
        .ok_or(ScaleError::Overflow { d, n })
}

/// The problem text of `p` with the mini-batch `from` replaced by `n`.
pub fn scale_problem(p: &Primitive, from: u64, n: u64) -> Result<String, ScaleError> {
    let s = &p.problem;
    if Descriptor::parse(s).is_some_and(|d| d.has("mb")) {
        return replace_mb(s, from, n);
    }
    // Dimension style: `8x64x16x16`, `8x512:512x10`, `SRC0:SRC1 DST`.
    let matmul = p.kind.family() == K::Matmul;
    let mut tensors: Vec<Vec<String>> = s
        .split([':', ' '])
        .map(|t| t.split('x').map(str::to_string).collect())
        .collect();
    let seps: Vec<char> = s.chars().filter(|c| *c == ':' || *c == ' ').collect();
    let num = |x: &str| x.parse::<u64>().ok();
    if matmul && tensors.len() >= 2 {
        let (sr, wr) = (tensors[0].len(), tensors[1].len());
        let at = |t: usize, i: Option<usize>| i.and_then(|i| num(&tensors[t][i]));
        let m = at(0, sr.checked_sub(2));
        let k = at(0, sr.checked_sub(1));
        let wk = at(1, wr.checked_sub(2));
        let dst_rank = tensors.get(2).map(|t| t.len());
        let mut scale_at = |t: usize, i: usize| -> Result<(), ScaleError> {
            let v = num(&tensors[t][i]).ok_or(ScaleError::NotANumber)?;
            tensors[t][i] = scale(v, from, n)?.to_string();
            Ok(())
        };
        if k == Some(from) && wk == Some(from) && m != Some(from) {
            // Weight gradient (`ba` source): src K×M and wei K×N where K is the mini-batch.
            scale_at(0, sr - 1)?;
            scale_at(1, wr - 2)?;
        } else if m.is_some_and(|m| m.is_multiple_of(from)) {
            // src M×K, dst M×N (when printed): M scales.
            scale_at(0, sr - 2)?;
            if let Some(d) = dst_rank.filter(|&r| r >= 2) {
                scale_at(2, d - 2)?;
            }
        } else {
            return Err(ScaleError::NoMultiple {
                problem: s.to_string(),
                from,
            });
        }
    } else {
        for t in tensors.iter_mut() {
            let Some(d0) = t.first().and_then(|x| num(x)) else {
                continue;
            };
            if d0.is_multiple_of(from) {
                t[0] = scale(d0, from, n)?.to_string();
            }
        }
    }
    let mut out = String::new();
    for (i, t) in tensors.iter().enumerate() {
        if i > 0 {
            out.push(seps[i - 1]);
        }
        out.push_str(&t.join("x"));
    }
    Ok(out)
}

/// `mbFROM` → `mbN` in a letter-style descriptor (any scaled multiple of `from` likewise).
fn replace_mb(s: &str, from: u64, n: u64) -> Result<String, ScaleError> {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 4);
    let mut i = 0;
    while i < b.len() {
        let starts = s[i..].starts_with("mb")
            && (i == 0 || !b[i - 1].is_ascii_lowercase())
            && b.get(i + 2).is_some_and(|c| c.is_ascii_digit());
        if starts {
            let mut j = i + 2;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let v: u64 = s[i + 2..j]
                .parse()
                .map_err(|_| ScaleError::MbNotANumber(s[i + 2..j].to_string()))?;
            if !v.is_multiple_of(from) {
                return Err(ScaleError::MbNotMultiple { v, from });
            }
            out.push_str("mb");
            out.push_str(&scale(v, from, n)?.to_string());
            i = j;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testing::prim;
    use super::super::{apply as what_if, WhatIf};
    use super::*;

    #[test]
    fn conv_and_its_reorders_scaled_weights_not() {
        // A logged NCHW convolution with ideep's reorders (PyTorch 2.15, resnet18, batch 8).
        let it = vec![
            prim("cpu,reorder,jit:blk,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd16b::f0,attr-scratchpad:user,,8x64x16x16"),
            prim("cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:ABcd16b16a::f0,attr-scratchpad:user,,64x64x3x3"),
            prim("cpu,convolution,jit:avx512_core,forward_training,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"),
            // Weight reorder whose dims equal an activation's first dim (oc 64 vs mb 8 here,
            // but plain on both sides): recognised by the neighbour's weight dims.
            prim("cpu,reorder,jit:uni,undef,src:f32::blocked:ABcd16b16a::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,,64x64x3x3"),
            prim("cpu,batch_normalization,jit:avx512_core,forward_training,src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,flags:CH,mb8ic64ih16iw16"),
        ];
        let w = WhatIf {
            batch: Some(32),
            ..Default::default()
        };
        let t = what_if(&w, &it).unwrap();
        let got: Vec<&str> = t
            .calls
            .iter()
            .map(|c| c.primitive.problem.as_str())
            .collect();
        assert_eq!(
            got,
            [
                "32x64x16x16",
                "64x64x3x3",
                "mb32_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1",
                "64x64x3x3",
                "mb32ic64ih16iw16"
            ]
        );
        assert!(t.assumptions[0].contains("mini-batch 8"));
    }

    #[test]
    fn matmul_forward_and_weight_gradient() {
        let fwd = prim("cpu,matmul,gemm:jit,undef,src:f32::blocked:ab::f0 wei:f32::blocked:ba::f0 dst:f32::blocked:ab::f0,,,8x512:512x10");
        let wgrad = prim("cpu,matmul,gemm:jit,undef,src:f32::blocked:ba::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,512x8:8x10");
        assert_eq!(scale_problem(&fwd, 8, 2).unwrap(), "2x512:512x10");
        assert_eq!(scale_problem(&wgrad, 8, 2).unwrap(), "512x2:2x10");
    }

    #[test]
    fn overflow_is_an_error_naming_the_call() {
        let it = vec![prim("cpu,convolution,jit:avx512_core,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1")];
        let w = WhatIf {
            batch: Some(u64::MAX / 2),
            ..Default::default()
        };
        let e = what_if(&w, &it).unwrap_err();
        assert_eq!(e.position, 0);
        assert!(e.what.contains("overflows"), "{e}");
        assert!(e.to_string().contains("mb8_ic64"), "{e}");
    }

    #[test]
    fn a_mini_batch_that_is_not_a_multiple_is_a_typed_error() {
        let conv = prim("cpu,convolution,jit:avx512_core,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,,alg:convolution_direct,mb6_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let e = scale_problem(&conv, 4, 8).unwrap_err();
        assert_eq!(e, ScaleError::MbNotMultiple { v: 6, from: 4 });
        assert_eq!(
            e.to_string(),
            "mini-batch 6 is not a multiple of the logged 4"
        );
    }

    #[test]
    fn no_compute_primitive_no_batch() {
        let it = vec![prim("cpu,eltwise,jit,forward_training,data:f32::blocked:abcd::f0,,alg:eltwise_relu,8x64x16x16")];
        let w = WhatIf {
            batch: Some(4),
            ..Default::default()
        };
        assert!(what_if(&w, &it)
            .unwrap_err()
            .what
            .contains("mini-batch is unknown"));
    }

    #[test]
    fn grouped_conv_pooling_and_eltwise_spellings() {
        let conv = prim("cpu,convolution,jit:avx512_core,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcde::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,,alg:convolution_direct,g2mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1");
        let pool = prim("cpu,pooling,jit:avx512_core,forward_training,src:f32::blocked:abcd::f0 dst:f32::blocked:abcd::f0 ws:u8::blocked:abcd::f0,,alg:pooling_max,mb8ic16_ih32oh16kh2sh2dh0ph0_iw32ow16kw2sw2dw0pw0");
        let relu = prim("cpu,eltwise,jit:avx512_core,forward_training,data:f32::blocked:abcd::f0,,alg:eltwise_relu,8x16x32x32");
        assert_eq!(
            scale_problem(&conv, 8, 24).unwrap(),
            "g2mb24_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"
        );
        assert_eq!(
            scale_problem(&pool, 8, 24).unwrap(),
            "mb24ic16_ih32oh16kh2sh2dh0ph0_iw32ow16kw2sw2dw0pw0"
        );
        assert_eq!(scale_problem(&relu, 8, 24).unwrap(), "24x16x32x32");
        // Halving: 8 -> 4.
        assert_eq!(scale_problem(&relu, 8, 4).unwrap(), "4x16x32x32");
    }
}
