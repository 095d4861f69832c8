//! LAMB (You et al.): Adam's update scaled per tensor by the trust ratio ‖p‖ / ‖u‖. PyTorch has
//! no LAMB; the definition followed is the paper's (as in NVIDIA apex's FusedLAMB without
//! gradient-norm clipping): u = m̂ / (√v̂ + ε) + λ·p, p ← p − lr·(‖p‖/‖u‖)·u, ratio 1 when a
//! norm is zero.

use super::{for_pieces, AdamState};
use crate::Isa;

#[derive(Debug, Clone, Copy)]
pub struct LambConfig {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
}

/// 1 / (1 − β1^step) and 1 / sqrt(1 − β2^step), computed in f64.
fn inverse_corrections(c: &LambConfig, step: i32) -> (f32, f32) {
    let bc1 = 1.0 - (c.beta1 as f64).powi(step);
    let bc2 = 1.0 - (c.beta2 as f64).powi(step);
    ((1.0 / bc1) as f32, (1.0 / bc2.sqrt()) as f32)
}

/// Elements per partial sum of the norms (the hand-written loop sums the same blocks).
const BLOCK: usize = 4096;

#[inline(always)]
fn update(c: &LambConfig, m: f32, v: f32, p: f32, inv_bc1: f32, inv_sqrt_bc2: f32) -> f32 {
    // (m / bc1) / (sqrt(v / bc2) + eps) with the bias corrections as multiplies by their
    // reciprocals: one division and one square root per element instead of three divisions
    // and a root, in each of the two passes (512-bit divisions and roots share one unit).
    (m * inv_bc1) / (v.sqrt() * inv_sqrt_bc2 + c.eps) + c.weight_decay * p
}

/// Pass 1: moments, and the squared norms of p and u (f64 over f32 lanes of 16).
#[inline(always)]
fn pass1(t: &mut AdamState, c: &LambConfig, inv_bc1: f32, inv_sqrt_bc2: f32) -> (f64, f64) {
    if let (super::Params::F32(p), super::Grad::F32(g)) = (&t.params, t.grad) {
        return pass1_f32(p, g, t.exp_avg, t.exp_avg_sq, c, inv_bc1, inv_sqrt_bc2);
    }
    pass1_any(t, c, inv_bc1, inv_sqrt_bc2)
}

/// The common case with plain slices, so the loop vectorizes.
#[inline(always)]
fn pass1_f32(
    p: &[f32],
    g: &[f32],
    ms: &mut [f32],
    vs: &mut [f32],
    c: &LambConfig,
    inv_bc1: f32,
    inv_sqrt_bc2: f32,
) -> (f64, f64) {
    let n = p.len();
    let (g, ms, vs) = (&g[..n], &mut ms[..n], &mut vs[..n]);
    let (mut pn, mut un) = (0f64, 0f64);
    // f32 lanes per block of 4096 elements, then f64 across blocks: a horizontal f64 sum per
    // 16 elements would be a serial chain costing more than the update itself.
    for (((pb, gb), mb), vb) in p
        .chunks(BLOCK)
        .zip(g.chunks(BLOCK))
        .zip(ms.chunks_mut(BLOCK))
        .zip(vs.chunks_mut(BLOCK))
    {
        let (mut pa, mut ua) = ([0f32; 16], [0f32; 16]);
        let step = |pc: &[f32],
                    gc: &[f32],
                    mc: &mut [f32],
                    vc: &mut [f32],
                    pa: &mut [f32; 16],
                    ua: &mut [f32; 16]| {
            for j in 0..pc.len() {
                let m = mc[j] + (1.0 - c.beta1) * (gc[j] - mc[j]);
                let v = vc[j] * c.beta2 + (1.0 - c.beta2) * gc[j] * gc[j];
                mc[j] = m;
                vc[j] = v;
                let u = update(c, m, v, pc[j], inv_bc1, inv_sqrt_bc2);
                pa[j] += pc[j] * pc[j];
                ua[j] += u * u;
            }
        };
        let mut pcs = pb.chunks_exact(16);
        let mut gcs = gb.chunks_exact(16);
        let mut mcs = mb.chunks_exact_mut(16);
        let mut vcs = vb.chunks_exact_mut(16);
        for (((pc, gc), mc), vc) in (&mut pcs).zip(&mut gcs).zip(&mut mcs).zip(&mut vcs) {
            step(pc, gc, mc, vc, &mut pa, &mut ua);
        }
        step(
            pcs.remainder(),
            gcs.remainder(),
            mcs.into_remainder(),
            vcs.into_remainder(),
            &mut pa,
            &mut ua,
        );
        pn += pa.iter().map(|x| *x as f64).sum::<f64>();
        un += ua.iter().map(|x| *x as f64).sum::<f64>();
    }
    (pn, un)
}

#[inline(always)]
fn pass1_any(t: &mut AdamState, c: &LambConfig, inv_bc1: f32, inv_sqrt_bc2: f32) -> (f64, f64) {
    let n = t.params.len();
    let (mut pn, mut un) = (0f64, 0f64);
    let mut i = 0;
    while i < n {
        let k = 16.min(n - i);
        let (mut pa, mut ua) = ([0f32; 16], [0f32; 16]);
        for j in 0..k {
            let idx = i + j;
            let p = t.params.get(idx);
            let g = t.grad.get(idx);
            let m = t.exp_avg[idx] + (1.0 - c.beta1) * (g - t.exp_avg[idx]);
            let v = t.exp_avg_sq[idx] * c.beta2 + (1.0 - c.beta2) * g * g;
            t.exp_avg[idx] = m;
            t.exp_avg_sq[idx] = v;
            let u = update(c, m, v, p, inv_bc1, inv_sqrt_bc2);
            pa[j] = p * p;
            ua[j] = u * u;
        }
        pn += pa.iter().map(|x| *x as f64).sum::<f64>();
        un += ua.iter().map(|x| *x as f64).sum::<f64>();
        i += k;
    }
    (pn, un)
}

#[inline(always)]
fn pass2(t: &mut AdamState, c: &LambConfig, inv_bc1: f32, inv_sqrt_bc2: f32, ratio: f32) {
    let (m, v) = (&t.exp_avg[..], &t.exp_avg_sq[..]);
    let n = t.params.len();
    super::store::update(&mut t.params, t.grad, 0..n, |p, _, i| {
        p - c.lr * ratio * update(c, m[i], v[i], p, inv_bc1, inv_sqrt_bc2)
    });
}

crate::dispatch! {
    fn lamb_tensor(t: &mut AdamState, c: &LambConfig) -> () {
        let s = t.step as i32;
        let (inv_bc1, inv_sqrt_bc2) = inverse_corrections(c, s);
        let (pn, un) = pass1(t, c, inv_bc1, inv_sqrt_bc2);
        let ratio = if pn > 0.0 && un > 0.0 { (pn.sqrt() / un.sqrt()) as f32 } else { 1.0 };
        pass2(t, c, inv_bc1, inv_sqrt_bc2, ratio)
    }
}

/// f32 parameters and gradient on AVX-512: both passes by the hand-written loops of `avx512`
/// (the same operations, blocks and lane order as `pass1_f32`/`pass2`, so the same bits);
/// `false` when this tensor or CPU takes the loops here. The auto-vectorized passes moved
/// 40 B/param at 1.93x the bandwidth bound (25 M parameters, 1 thread).
fn hand_written(isa: Isa, t: &mut AdamState, c: &LambConfig) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let (super::Params::F32(p), super::Grad::F32(g)) = (&mut t.params, t.grad) {
        let st = t.step as i32;
        let s = super::avx512::Lamb {
            b1: c.beta1,
            b2: c.beta2,
            inv_bc1: inverse_corrections(c, st).0,
            inv_sqrt_bc2: inverse_corrections(c, st).1,
            eps: c.eps,
            wd: c.weight_decay,
            prefetch: super::avx512::software_prefetch(),
        };
        let (m, v) = (&mut *t.exp_avg, &mut *t.exp_avg_sq);
        let Some((pn, un)) = super::avx512::lamb_pass1(isa, p, g, m, v, s, BLOCK) else {
            return false;
        };
        let ratio = if pn > 0.0 && un > 0.0 {
            (pn.sqrt() / un.sqrt()) as f32
        } else {
            1.0
        };
        return super::avx512::lamb_pass2(isa, p, m, v, s, c.lr * ratio);
    }
    let _ = (isa, t, c);
    false
}

pub fn lamb_step(isa: Isa, threads: usize, tensors: &mut [AdamState], c: &LambConfig) {
    for t in tensors.iter_mut() {
        t.step += 1;
    }
    let lens: Vec<usize> = tensors.iter().map(|t| t.params.len()).collect();
    for_pieces(tensors, &lens, threads, usize::MAX, |t, _| {
        if !hand_written(isa, t, c) {
            lamb_tensor(isa, t, c)
        }
    });
}
