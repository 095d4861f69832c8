//! The loops: chunks of 16 elements (one AVX-512 register), partial sums per fixed block of
//! elements (so the reduced loss is the same for any thread count), threads over contiguous
//! ranges that start on block boundaries.

use super::elem::{focal, gamma_mode, GAMMA_0, GAMMA_1, GAMMA_2};
use super::table::{t0_table, Table};
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

/// An element the fused loops read or write: f32, or bf16 bits (`u16`) converted on the fly.
trait Elem: Copy {
    /// bf16: all-zero-target chunks are looked up in `table::t0_table`.
    const TABLE: bool;
    fn get(self) -> f32;
    fn put(v: f32) -> Self;
    /// The 16 bits of a bf16 (not called for f32).
    fn bits(self) -> u16;
}

impl Elem for f32 {
    const TABLE: bool = false;
    #[inline(always)]
    fn bits(self) -> u16 {
        0
    }
    #[inline(always)]
    fn get(self) -> f32 {
        self
    }
    #[inline(always)]
    fn put(v: f32) -> f32 {
        v
    }
}

impl Elem for u16 {
    const TABLE: bool = true;
    #[inline(always)]
    fn bits(self) -> u16 {
        self
    }
    #[inline(always)]
    fn get(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn put(v: f32) -> u16 {
        bf16::from_f32(v)
    }
}

/// What every chunk of a fused pass shares.
#[derive(Clone, Copy)]
struct Pass<'a> {
    p: Params,
    /// The gradient's factor (d reduced loss / d loss).
    scale: f32,
    weighted: bool,
    /// bf16 logits with γ ∈ {0, 1, 2}: all-zero-target chunks are looked up here.
    tab: Option<&'a Table>,
}

/// The lanes of a block's accumulator added in lane order, in f64.
#[inline(always)]
fn lane_sum(acc: &[f32; W]) -> f64 {
    acc.iter().map(|v| *v as f64).sum()
}

/// Where a chunk's targets come from: dense values, or a class index relative to the chunk
/// (target 1 at that lane, 0 elsewhere; out of `0..W` for none).
#[derive(Clone, Copy)]
enum ChunkTargets<'a, T> {
    Dense(&'a [T]),
    Class(i64),
}

/// Loss and scaled gradient of `n ≤ W` elements at `x` with targets `t`, added to `acc`
/// (lane i < n) and, with `GRAD`, written to `g`. Always computed as a full chunk of
/// fixed-size arrays (a short one padded with zeros), so the compiler keeps it in vector
/// registers: a per-element loop for the last 8 of a row's 264 classes cost a quarter of the
/// row's time.
#[inline(always)]
fn fused_chunk<const G: u8, const GRAD: bool, X: Elem, T: Elem>(
    x: &[X],
    t: ChunkTargets<T>,
    pass: Pass,
    g: &mut [X],
    acc: &mut [f32; W],
) {
    let Pass {
        p,
        scale,
        weighted,
        tab,
    } = pass;
    let n = x.len();
    let (mut xv, mut tv) = ([0f32; W], [0f32; W]);
    let mut bits = [0u16; W];
    if let Ok(xc) = <&[X; W]>::try_from(x) {
        for i in 0..W {
            xv[i] = xc[i].get();
            bits[i] = xc[i].bits();
        }
    } else {
        for ((v, b), e) in xv.iter_mut().zip(bits.iter_mut()).zip(x) {
            *v = e.get();
            *b = e.bits();
        }
    }
    match t {
        ChunkTargets::Dense(t) => match <&[T; W]>::try_from(t) {
            Ok(tc) => {
                for i in 0..W {
                    tv[i] = tc[i].get();
                }
            }
            Err(_) => {
                for (v, e) in tv.iter_mut().zip(t) {
                    *v = e.get();
                }
            }
        },
        ChunkTargets::Class(label) => {
            for (i, v) in tv.iter_mut().enumerate() {
                *v = if i as i64 == label { 1.0 } else { 0.0 };
            }
        }
    }
    let mut d = [0f32; W];
    match tab.filter(|_| X::TABLE && tv.iter().all(|v| *v == 0.0)) {
        // α_t of t = 0 is α·0 + (1 − α)·1 = 1 − α exactly, so the gradient is the computed
        // one's bits; the loss α_t·(ce·w) instead of (α_t·ce)·w may differ in its last bit.
        Some(tab) => {
            let at = if weighted { 1.0 - p.alpha } else { 1.0 };
            for i in 0..W {
                let [l, di] = tab[bits[i] as usize];
                acc[i] += if i < n { at * l } else { 0.0 };
                d[i] = at * di * scale;
            }
        }
        None => {
            for i in 0..W {
                let (l, di) = focal::<G>(xv[i], tv[i], p.alpha, p.gamma, weighted);
                acc[i] += if i < n { l } else { 0.0 };
                d[i] = di * scale;
            }
        }
    }
    if GRAD {
        if let Ok(gc) = <&mut [X; W]>::try_from(&mut *g) {
            for i in 0..W {
                gc[i] = X::put(d[i]);
            }
        } else {
            for (o, v) in g.iter_mut().zip(d) {
                *o = X::put(v);
            }
        }
    }
}

/// The training step's common case, without per-chunk dispatch: f32 or bf16 logits, dense
/// f32/bf16 targets, gradient × a scalar written (`GRAD`) or not (a reduced forward), no
/// per-element loss output. Straight loops over slices, which the compiler vectorizes whole;
/// one block sum per `BLOCK` elements, as `range`.
#[inline(always)]
fn fused_dense<const G: u8, const GRAD: bool, X: Elem, T: Elem>(
    x: &[X],
    t: &[T],
    pass: Pass,
    g: &mut [X],
) -> Vec<f64> {
    let mut sums = Vec::with_capacity(x.len().div_ceil(BLOCK));
    for b in (0..x.len()).step_by(BLOCK) {
        let end = (b + BLOCK).min(x.len());
        let mut acc = [0f32; W];
        for c in (b..end).step_by(W) {
            let e = (c + W).min(end);
            let gc = if GRAD { &mut g[c..e] } else { &mut [][..] };
            let tc = ChunkTargets::Dense(&t[c..e]);
            fused_chunk::<G, GRAD, X, T>(&x[c..e], tc, pass, gc, &mut acc);
        }
        sums.push(lane_sum(&acc));
    }
    sums
}

/// `fused_dense` for class-index targets: one sum per row; an ignored row has gradient 0.
#[inline(always)]
fn fused_classes<const G: u8, const GRAD: bool, X: Elem>(
    x: &[X],
    (labels, classes, ignore_index): (&[i64], usize, i64),
    pass: Pass,
    g: &mut [X],
) -> Vec<f64> {
    let mut sums = Vec::with_capacity(labels.len());
    for (r, &label) in labels.iter().enumerate() {
        let base = r * classes;
        if label == ignore_index {
            if GRAD {
                g[base..base + classes].fill(X::put(0.0));
            }
            sums.push(0.0);
            continue;
        }
        let mut acc = [0f32; W];
        for c in (0..classes).step_by(W) {
            let e = (c + W).min(classes);
            let gc = if GRAD {
                &mut g[base + c..base + e]
            } else {
                &mut [][..]
            };
            let tc = ChunkTargets::<f32>::Class(label.wrapping_sub(c as i64));
            let xc = &x[base + c..base + e];
            fused_chunk::<G, GRAD, X, f32>(xc, tc, pass, gc, &mut acc);
        }
        sums.push(lane_sum(&acc));
    }
    sums
}

/// What the fused loops take: logits and gradient of one type, targets of either.
enum Fused<'a, X> {
    Dense32(&'a [X], &'a [f32]),
    Dense16(&'a [X], &'a [u16]),
    Classes(&'a [X], &'a [i64], usize, i64),
}

#[inline(always)]
fn fused_any<const G: u8, const GRAD: bool, X: Elem>(
    f: Fused<X>,
    pass: Pass,
    g: &mut [X],
) -> Vec<f64> {
    match f {
        Fused::Dense32(x, t) => fused_dense::<G, GRAD, X, f32>(x, t, pass, g),
        Fused::Dense16(x, t) => fused_dense::<G, GRAD, X, u16>(x, t, pass, g),
        Fused::Classes(x, l, c, ig) => fused_classes::<G, GRAD, X>(x, (l, c, ig), pass, g),
    }
}

/// `fused_any` for γ's mode `gm`, with the gradient written when `g` is given.
#[inline(always)]
fn fused_gamma<X: Elem>(gm: u8, f: Fused<X>, pass: Pass, g: Option<&mut [X]>) -> Vec<f64> {
    match (gm, g) {
        (GAMMA_0, Some(g)) => fused_any::<0, true, X>(f, pass, g),
        (GAMMA_1, Some(g)) => fused_any::<1, true, X>(f, pass, g),
        (GAMMA_2, Some(g)) => fused_any::<2, true, X>(f, pass, g),
        (_, Some(g)) => fused_any::<3, true, X>(f, pass, g),
        (GAMMA_0, None) => fused_any::<0, false, X>(f, pass, &mut []),
        (GAMMA_1, None) => fused_any::<1, false, X>(f, pass, &mut []),
        (GAMMA_2, None) => fused_any::<2, false, X>(f, pass, &mut []),
        (_, None) => fused_any::<3, false, X>(f, pass, &mut []),
    }
}

crate::dispatch! {
    fn fused_f32(gm: u8, f: Fused<f32>, pass: Pass, g: Option<&mut [f32]>) -> Vec<f64> {
        fused_gamma(gm, f, pass, g)
    }
}

crate::dispatch! {
    fn fused_bf16(gm: u8, f: Fused<u16>, pass: Pass, g: Option<&mut [u16]>) -> Vec<f64> {
        fused_gamma(gm, f, pass, g)
    }
}

/// The fused loops when they apply (a reduced pass: no per-element loss output or incoming
/// gradient; the gradient, if written, in the logits' type): the block sums, else `None`.
fn fused(isa: Isa, x: Tensor, t: Targets, p: Params, gr: Grad, o: &mut Out) -> Option<Vec<f64>> {
    let (gm, weighted) = (gamma_mode(p.gamma), p.alpha >= 0.0);
    if o.loss.is_some() {
        return None;
    }
    let scale = match (gr, o.grad.is_some()) {
        (Grad::Scalar(s), true) => s,
        (Grad::No, false) => 1.0,
        _ => return None,
    };
    macro_rules! shape {
        ($x:expr) => {
            match t {
                Targets::Dense(Tensor::F32(t)) => Fused::Dense32($x, t),
                Targets::Dense(Tensor::Bf16(t)) => Fused::Dense16($x, t),
                Targets::Classes {
                    labels,
                    classes,
                    ignore_index,
                } => Fused::Classes($x, labels, classes, ignore_index),
            }
        };
    }
    let pass = |tab| Pass {
        p,
        scale,
        weighted,
        tab,
    };
    match (x, o.grad.as_mut()) {
        (Tensor::F32(xs), g) => {
            let g = match g {
                Some(TensorMut::F32(g)) => Some(&mut **g),
                None => None,
                Some(TensorMut::Bf16(_)) => return None,
            };
            Some(fused_f32(isa, gm, shape!(xs), pass(None), g))
        }
        (Tensor::Bf16(xs), g) => {
            let g = match g {
                Some(TensorMut::Bf16(g)) => Some(&mut **g),
                None => None,
                Some(TensorMut::F32(_)) => return None,
            };
            Some(fused_bf16(isa, gm, shape!(xs), pass(t0_table(gm)), g))
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
    // Every job flushes denormals (crate::fpmode: they made the ops reading the gradient slow).
    let work = move |job: (Tensor, Targets, Grad, Out)| -> Vec<f64> {
        crate::fpmode::flushing_denormals(|| job_sums(isa, g, p, weighted, job))
    };
    let n = jobs.len();
    let sums: Vec<Vec<f64>> = crate::pool::map(jobs, n, work);
    // Block sums in index order: the same total for any split.
    sums.iter().flatten().sum()
}

/// One job's block sums: the hand-written AVX-512 loop when it applies, else the generic ones.
fn job_sums(
    isa: Isa,
    g: u8,
    p: Params,
    weighted: bool,
    (x, t, gr, mut o): (Tensor, Targets, Grad, Out),
) -> Vec<f64> {
    {
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
        if let Some(sums) = fused(isa, x, t, p, gr, &mut o) {
            return sums;
        }
        range_dispatch(isa, g, x, t, p, gr, o, weighted)
    }
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
