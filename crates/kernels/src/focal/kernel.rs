//! The loops: chunks of 16 elements (one AVX-512 register), partial sums per fixed block of
//! elements (so the reduced loss is the same for any thread count), threads over contiguous
//! ranges that start on block boundaries.

use super::elem::{focal, gamma_mode, GAMMA_0, GAMMA_1, GAMMA_2};
use super::{FocalError, Params, Reduction, Targets, Tensor, TensorMut};
use crate::bf16;
use crate::dispatch::{split, Isa};

const W: usize = 16;
/// Elements per partial sum (dense targets).
const BLOCK: usize = 4096;
/// Rows per partial sum of the AVX-512 class-index loop.
#[cfg(target_arch = "x86_64")]
use super::avx512::ROW_GROUP;
#[cfg(not(target_arch = "x86_64"))]
const ROW_GROUP: usize = 64;

/// What a pass computes.
#[derive(Clone, Copy)]
enum Grad<'a> {
    No,
    /// d(reduced loss)/d(loss_i) is this scalar for every element.
    Scalar(f32),
    /// Reduction none: per-element incoming gradient.
    PerElement(Tensor<'a>),
}

#[inline(always)]
fn load(t: &Tensor, start: usize, n: usize, out: &mut [f32; W]) {
    // Full chunks copy a fixed size, which compiles to vector moves (a variable-length copy
    // would be a `memcpy` call per 16 elements).
    if n == W {
        match t {
            Tensor::F32(v) => out.copy_from_slice(&v[start..start + W]),
            Tensor::Bf16(v) => {
                let src: &[u16; W] = v[start..start + W].try_into().expect("W");
                for i in 0..W {
                    out[i] = bf16::to_f32(src[i]);
                }
            }
        }
        return;
    }
    match t {
        Tensor::F32(v) => {
            out[..n].copy_from_slice(&v[start..start + n]);
        }
        Tensor::Bf16(v) => {
            for i in 0..n {
                out[i] = bf16::to_f32(v[start + i]);
            }
        }
    }
    for o in out[n..].iter_mut() {
        *o = 0.0;
    }
}

#[inline(always)]
fn store(t: &mut TensorMut, start: usize, n: usize, vals: &[f32; W]) {
    if n == W {
        match t {
            TensorMut::F32(v) => v[start..start + W].copy_from_slice(vals),
            TensorMut::Bf16(v) => {
                let dst: &mut [u16; W] = (&mut v[start..start + W]).try_into().expect("W");
                for i in 0..W {
                    dst[i] = bf16::from_f32(vals[i]);
                }
            }
        }
        return;
    }
    match t {
        TensorMut::F32(v) => v[start..start + n].copy_from_slice(&vals[..n]),
        TensorMut::Bf16(v) => {
            for i in 0..n {
                v[start + i] = bf16::from_f32(vals[i]);
            }
        }
    }
}

struct Out<'a> {
    loss: Option<TensorMut<'a>>,
    grad: Option<TensorMut<'a>>,
}

/// One chunk: up to W elements at `start` (relative to the range's slices) with targets `t`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn chunk<const G: u8>(
    x_src: &Tensor,
    start: usize,
    n: usize,
    t: &[f32; W],
    p: Params,
    weighted: bool,
    grad: &Grad,
    out: &mut Out,
    acc: &mut [f32; W],
) {
    let mut x = [0f32; W];
    load(x_src, start, n, &mut x);
    let mut l = [0f32; W];
    let mut g = [0f32; W];
    for i in 0..W {
        let (li, gi) = focal::<G>(x[i], t[i], p.alpha, p.gamma, weighted);
        l[i] = li;
        g[i] = gi;
    }
    for i in 0..W {
        acc[i] += if i < n { l[i] } else { 0.0 };
    }
    if let Some(o) = out.loss.as_mut() {
        store(o, start, n, &l);
    }
    match grad {
        Grad::No => {}
        Grad::Scalar(s) => {
            for gi in g.iter_mut() {
                *gi *= *s;
            }
            if let Some(o) = out.grad.as_mut() {
                store(o, start, n, &g);
            }
        }
        Grad::PerElement(up) => {
            let mut u = [0f32; W];
            load(up, start, n, &mut u);
            for i in 0..W {
                g[i] *= u[i];
            }
            if let Some(o) = out.grad.as_mut() {
                store(o, start, n, &g);
            }
        }
    }
}

#[inline(always)]
fn zero(t: &mut Option<TensorMut>, start: usize, n: usize) {
    match t {
        Some(TensorMut::F32(v)) => v[start..start + n].fill(0.0),
        Some(TensorMut::Bf16(v)) => v[start..start + n].fill(0),
        None => {}
    }
}

/// A thread's share: block sums of the loss, in order. Inlined into the ISA-specific entry
/// points: a non-inlined generic would be compiled without the target features (and `mul_add`
/// would become a software FMA call).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn range<const G: u8>(
    x: Tensor,
    targets: Targets,
    p: Params,
    grad: Grad,
    mut out: Out,
    weighted: bool,
) -> Vec<f64> {
    let mut sums = Vec::new();
    let mut acc = [0f32; W];
    let flush = |acc: &mut [f32; W], sums: &mut Vec<f64>| {
        sums.push(acc.iter().map(|v| *v as f64).sum());
        *acc = [0.0; W];
    };
    match targets {
        Targets::Dense(t) => {
            let n = x.len();
            let mut tb = [0f32; W];
            let mut s = 0;
            while s < n {
                let k = W.min(n - s);
                load(&t, s, k, &mut tb);
                chunk::<G>(&x, s, k, &tb, p, weighted, &grad, &mut out, &mut acc);
                s += k;
                if s % BLOCK == 0 || s == n {
                    flush(&mut acc, &mut sums);
                }
            }
        }
        Targets::Classes {
            labels,
            classes,
            ignore_index,
        } => {
            // One partial sum per row: rows are the unit of the split, so sums do not depend
            // on the thread count.
            for (r, &label) in labels.iter().enumerate() {
                let base = r * classes;
                if label == ignore_index {
                    zero(&mut out.loss, base, classes);
                    zero(&mut out.grad, base, classes);
                    sums.push(0.0);
                    continue;
                }
                let mut c = 0;
                while c < classes {
                    let k = W.min(classes - c);
                    let mut tb = [0f32; W];
                    for (i, v) in tb.iter_mut().enumerate() {
                        *v = if (c + i) as i64 == label { 1.0 } else { 0.0 };
                    }
                    chunk::<G>(&x, base + c, k, &tb, p, weighted, &grad, &mut out, &mut acc);
                    c += k;
                }
                flush(&mut acc, &mut sums);
            }
        }
    }
    sums
}

/// The training step's common case, without per-chunk dispatch: f32 logits, dense f32 or
/// class-index targets, gradient written with a scalar scale, no per-element loss output.
/// Straight loops over slices, which the compiler vectorizes whole.
#[inline(always)]
fn fused_f32<const G: u8>(
    x: &[f32],
    targets: Targets,
    p: Params,
    scale: f32,
    g: &mut [f32],
    weighted: bool,
) -> Vec<f64> {
    let mut sums = Vec::new();
    let lanes = |acc: &[f32; W]| acc.iter().map(|v| *v as f64).sum::<f64>();
    match targets {
        Targets::Dense(Tensor::F32(t)) => {
            for ((xb, tb), gb) in x
                .chunks(BLOCK)
                .zip(t.chunks(BLOCK))
                .zip(g.chunks_mut(BLOCK))
            {
                let mut acc = [0f32; W];
                let mut xs = xb.chunks_exact(W);
                let mut ts = tb.chunks_exact(W);
                let mut gs = gb.chunks_exact_mut(W);
                for ((xc, tc), gc) in (&mut xs).zip(&mut ts).zip(&mut gs) {
                    for i in 0..W {
                        let (l, d) = focal::<G>(xc[i], tc[i], p.alpha, p.gamma, weighted);
                        acc[i] += l;
                        gc[i] = d * scale;
                    }
                }
                let mut tail = 0f32;
                for ((xv, tv), gv) in xs
                    .remainder()
                    .iter()
                    .zip(ts.remainder())
                    .zip(gs.into_remainder())
                {
                    let (l, d) = focal::<G>(*xv, *tv, p.alpha, p.gamma, weighted);
                    tail += l;
                    *gv = d * scale;
                }
                sums.push(lanes(&acc) + tail as f64);
            }
        }
        Targets::Classes {
            labels,
            classes,
            ignore_index,
        } => {
            for ((row, gr), &label) in x.chunks(classes).zip(g.chunks_mut(classes)).zip(labels) {
                if label == ignore_index {
                    gr.fill(0.0);
                    sums.push(0.0);
                    continue;
                }
                let mut acc = [0f32; W];
                let mut xs = row.chunks_exact(W);
                let mut gs = gr.chunks_exact_mut(W);
                let mut c0 = 0i64;
                for (xc, gc) in (&mut xs).zip(&mut gs) {
                    for i in 0..W {
                        let t = if c0 + i as i64 == label { 1.0 } else { 0.0 };
                        let (l, d) = focal::<G>(xc[i], t, p.alpha, p.gamma, weighted);
                        acc[i] += l;
                        gc[i] = d * scale;
                    }
                    c0 += W as i64;
                }
                let mut tail = 0f32;
                for (k, (xv, gv)) in xs.remainder().iter().zip(gs.into_remainder()).enumerate() {
                    let t = if c0 + k as i64 == label { 1.0 } else { 0.0 };
                    let (l, d) = focal::<G>(*xv, t, p.alpha, p.gamma, weighted);
                    tail += l;
                    *gv = d * scale;
                }
                sums.push(lanes(&acc) + tail as f64);
            }
        }
        _ => unreachable!("fused_f32 is only called for f32 dense or class targets"),
    }
    sums
}

crate::dispatch! {
    fn fused_dispatch(g: u8, x: &[f32], targets: Targets, p: Params, scale: f32, out: &mut [f32], weighted: bool) -> Vec<f64> {
        match g {
            GAMMA_0 => fused_f32::<0>(x, targets, p, scale, out, weighted),
            GAMMA_1 => fused_f32::<1>(x, targets, p, scale, out, weighted),
            GAMMA_2 => fused_f32::<2>(x, targets, p, scale, out, weighted),
            _ => fused_f32::<3>(x, targets, p, scale, out, weighted),
        }
    }
}

crate::dispatch! {
    fn range_dispatch(g: u8, x: Tensor, targets: Targets, p: Params, grad: Grad, out: Out, weighted: bool) -> Vec<f64> {
        match g {
            GAMMA_0 => range::<0>(x, targets, p, grad, out, weighted),
            GAMMA_1 => range::<1>(x, targets, p, grad, out, weighted),
            GAMMA_2 => range::<2>(x, targets, p, grad, out, weighted),
            _ => range::<3>(x, targets, p, grad, out, weighted),
        }
    }
}

fn sub<'a>(t: &Tensor<'a>, r: std::ops::Range<usize>) -> Tensor<'a> {
    match t {
        Tensor::F32(v) => Tensor::F32(&v[r]),
        Tensor::Bf16(v) => Tensor::Bf16(&v[r]),
    }
}

/// Splits a mutable output into consecutive pieces of the given lengths.
fn split_mut<'a>(t: Option<TensorMut<'a>>, lens: &[usize]) -> Vec<Option<TensorMut<'a>>> {
    let mut out = Vec::new();
    match t {
        None => lens.iter().for_each(|_| out.push(None)),
        Some(TensorMut::F32(mut v)) => {
            for &l in lens {
                let (a, b) = std::mem::take(&mut v).split_at_mut(l);
                out.push(Some(TensorMut::F32(a)));
                v = b;
            }
        }
        Some(TensorMut::Bf16(mut v)) => {
            for &l in lens {
                let (a, b) = std::mem::take(&mut v).split_at_mut(l);
                out.push(Some(TensorMut::Bf16(a)));
                v = b;
            }
        }
    }
    out
}

/// Elements that count for `mean`.
fn counted(x: &Tensor, targets: &Targets) -> usize {
    match targets {
        Targets::Dense(_) => x.len(),
        Targets::Classes {
            labels,
            classes,
            ignore_index,
        } => labels.iter().filter(|l| **l != *ignore_index).count() * classes,
    }
}

fn check(
    x: &Tensor,
    targets: &Targets,
    p: &Params,
    outs: &[Option<usize>],
) -> Result<(), FocalError> {
    if p.gamma.is_nan() || p.gamma < 0.0 {
        return Err(FocalError::Gamma(p.gamma));
    }
    match targets {
        Targets::Dense(t) if t.len() != x.len() => {
            return Err(FocalError::Shape(format!(
                "targets have {} elements, logits {}",
                t.len(),
                x.len()
            )))
        }
        Targets::Classes {
            labels, classes, ..
        } if labels.len() * classes != x.len() => {
            return Err(FocalError::Shape(format!(
                "{} labels x {} classes != {} logits",
                labels.len(),
                classes,
                x.len()
            )))
        }
        _ => {}
    }
    for o in outs.iter().flatten() {
        if *o != x.len() {
            return Err(FocalError::Shape(format!(
                "output has {o} elements, logits {}",
                x.len()
            )));
        }
    }
    Ok(())
}

/// Runs the pass over `threads` contiguous pieces; returns the loss sum.
#[allow(clippy::too_many_arguments)]
fn run(
    isa: Isa,
    threads: usize,
    x: Tensor,
    targets: Targets,
    p: Params,
    grad: Grad,
    loss_out: Option<TensorMut>,
    grad_out: Option<TensorMut>,
) -> f64 {
    let weighted = p.alpha >= 0.0;
    let g = gamma_mode(p.gamma);
    // Pieces in elements, on block (dense) or row (classes) boundaries.
    let (unit, units) = match targets {
        Targets::Dense(_) => (1, x.len()),
        Targets::Classes {
            labels, classes, ..
        } => (classes.max(1), labels.len()),
    };
    // Classes: the AVX-512 loop sums groups of rows; splitting on them keeps the sum the same
    // for any thread count.
    let align = if unit == 1 { BLOCK } else { ROW_GROUP };
    // Below ~64 K elements per thread, starting threads costs more than it saves.
    let threads = threads.min((x.len() / (1 << 16)).max(1));
    let pieces = split(units, threads, align);
    let lens: Vec<usize> = pieces.iter().map(|r| r.len() * unit).collect();
    // Fresh logits-sized outputs are faulted in with 2 MB pages (see `pages`).
    for out in [&loss_out, &grad_out].into_iter().flatten() {
        let (ptr, bytes) = match out {
            TensorMut::F32(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(&**v)),
            TensorMut::Bf16(v) => (v.as_ptr() as *const u8, std::mem::size_of_val(&**v)),
        };
        crate::pages::prefer_huge_pages(ptr, bytes);
    }
    let louts = split_mut(loss_out, &lens);
    let gouts = split_mut(grad_out, &lens);
    let jobs: Vec<_> = pieces
        .iter()
        .zip(louts)
        .zip(gouts)
        .map(|((r, lo), go)| {
            let er = r.start * unit..r.end * unit;
            let t = match targets {
                Targets::Dense(t) => Targets::Dense(sub(&t, er.clone())),
                Targets::Classes {
                    labels,
                    classes,
                    ignore_index,
                } => Targets::Classes {
                    labels: &labels[r.clone()],
                    classes,
                    ignore_index,
                },
            };
            let gr = match grad {
                Grad::PerElement(u) => Grad::PerElement(sub(&u, er.clone())),
                other => other,
            };
            (sub(&x, er), t, gr, Out { loss: lo, grad: go })
        })
        .collect();
    let work = move |(x, t, gr, mut o): (Tensor, Targets, Grad, Out)| -> Vec<f64> {
        // Reduced passes (no per-element loss output, no per-element incoming gradient): the
        // hand-written AVX-512 loop when it applies.
        #[cfg(target_arch = "x86_64")]
        if let Some(proof) = super::avx512::applies(isa, g).filter(|_| o.loss.is_none()) {
            let scaled = match (gr, o.grad.as_mut()) {
                (Grad::Scalar(scale), Some(gm)) => Some((scale, Some(gm))),
                (Grad::No, None) => Some((1.0, None)),
                _ => None,
            };
            if let Some((scale, gm)) = scaled {
                let sums =
                    super::avx512::fused(proof, g, x, t, p.alpha, weighted, scale, gm, BLOCK);
                if let Some(sums) = sums {
                    return sums;
                }
            }
        }
        let fast = matches!(
            (&x, &t, &gr, &o.loss, &o.grad),
            (
                Tensor::F32(_),
                Targets::Dense(Tensor::F32(_)) | Targets::Classes { .. },
                Grad::Scalar(_),
                None,
                Some(TensorMut::F32(_))
            )
        );
        if fast {
            if let (Tensor::F32(xs), Grad::Scalar(scale), Some(TensorMut::F32(gs))) =
                (x, gr, o.grad.as_mut())
            {
                return fused_dispatch(isa, g, xs, t, p, scale, gs, weighted);
            }
        }
        range_dispatch(isa, g, x, t, p, gr, o, weighted)
    };
    let n = jobs.len();
    let sums: Vec<Vec<f64>> = crate::pool::map(jobs, n, work);
    // Block sums in index order: the same total for any split.
    sums.iter().flatten().sum()
}

/// Forward. `out` receives per-element losses for `Reduction::None` (required then); the
/// return value is the reduced loss (the sum for `None`, for reference).
pub fn forward(
    isa: Isa,
    threads: usize,
    logits: Tensor,
    targets: Targets,
    p: Params,
    reduction: Reduction,
    out: Option<TensorMut>,
) -> Result<f32, FocalError> {
    check(&logits, &targets, &p, &[out.as_ref().map(|o| o.len())])?;
    if reduction == Reduction::None && out.is_none() {
        return Err(FocalError::Shape(
            "reduction none needs an output tensor".into(),
        ));
    }
    let sum = run(isa, threads, logits, targets, p, Grad::No, out, None);
    Ok(match reduction {
        // Like torch: the mean of nothing is NaN.
        Reduction::Mean => (sum / counted(&logits, &targets) as f64) as f32,
        _ => sum as f32,
    })
}

/// Backward: `grad_in` = d(loss)/d(logits) given the incoming gradient (`grad_out_scalar` for
/// mean/sum, `grad_out` per element for none).
#[allow(clippy::too_many_arguments)]
pub fn backward(
    isa: Isa,
    threads: usize,
    logits: Tensor,
    targets: Targets,
    p: Params,
    reduction: Reduction,
    grad_out_scalar: f32,
    grad_out: Option<Tensor>,
    grad_in: TensorMut,
) -> Result<(), FocalError> {
    check(
        &logits,
        &targets,
        &p,
        &[Some(grad_in.len()), grad_out.map(|g| g.len())],
    )?;
    let grad = match (reduction, grad_out) {
        (Reduction::None, Some(g)) => Grad::PerElement(g),
        (Reduction::None, None) => {
            return Err(FocalError::Shape(
                "reduction none needs a per-element grad_out".into(),
            ))
        }
        (Reduction::Mean, _) => {
            Grad::Scalar(grad_out_scalar / counted(&logits, &targets).max(1) as f32)
        }
        (Reduction::Sum, _) => Grad::Scalar(grad_out_scalar),
    };
    run(isa, threads, logits, targets, p, grad, None, Some(grad_in));
    Ok(())
}

/// Fused forward and backward of a reduced loss: one pass reads logits and targets, returns
/// the loss and writes d(loss)/d(logits) scaled by `grad_scale` (the incoming gradient, 1.0 in
/// a plain training step).
#[allow(clippy::too_many_arguments)]
pub fn forward_backward(
    isa: Isa,
    threads: usize,
    logits: Tensor,
    targets: Targets,
    p: Params,
    reduction: Reduction,
    grad_scale: f32,
    grad_in: TensorMut,
) -> Result<f32, FocalError> {
    check(&logits, &targets, &p, &[Some(grad_in.len())])?;
    let n = counted(&logits, &targets);
    let (scale, div) = match reduction {
        Reduction::Mean => (grad_scale / n.max(1) as f32, n as f64),
        Reduction::Sum => (grad_scale, 1.0),
        Reduction::None => {
            return Err(FocalError::Shape(
                "the fused pass needs reduction mean or sum".into(),
            ))
        }
    };
    let sum = run(
        isa,
        threads,
        logits,
        targets,
        p,
        Grad::Scalar(scale),
        None,
        Some(grad_in),
    );
    Ok((sum / div) as f32)
}
