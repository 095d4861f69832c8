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

/// Pass 1: moments, and per block of [`BLOCK`] elements the sums of p² and u² (f64 over f32
/// lanes of 16) into `sums`.
#[inline(always)]
fn pass1(
    t: &mut AdamState,
    c: &LambConfig,
    inv_bc1: f32,
    inv_sqrt_bc2: f32,
    sums: &mut [(f64, f64)],
) {
    if let (super::Params::F32(p), super::Grad::F32(g)) = (&t.params, t.grad) {
        return pass1_f32(
            p,
            g,
            t.exp_avg,
            t.exp_avg_sq,
            c,
            (inv_bc1, inv_sqrt_bc2),
            sums,
        );
    }
    pass1_any(t, c, inv_bc1, inv_sqrt_bc2, sums)
}

/// The common case with plain slices, so the loop vectorizes.
#[inline(always)]
fn pass1_f32(
    p: &[f32],
    g: &[f32],
    ms: &mut [f32],
    vs: &mut [f32],
    c: &LambConfig,
    (inv_bc1, inv_sqrt_bc2): (f32, f32),
    sums: &mut [(f64, f64)],
) {
    let n = p.len();
    let (g, ms, vs) = (&g[..n], &mut ms[..n], &mut vs[..n]);
    assert_eq!(sums.len(), n.div_ceil(BLOCK), "one sum per block");
    // f32 lanes per block of 4096 elements, then f64 across blocks: a horizontal f64 sum per
    // 16 elements would be a serial chain costing more than the update itself.
    for ((((pb, gb), mb), vb), sum) in p
        .chunks(BLOCK)
        .zip(g.chunks(BLOCK))
        .zip(ms.chunks_mut(BLOCK))
        .zip(vs.chunks_mut(BLOCK))
        .zip(sums.iter_mut())
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
        *sum = (
            pa.iter().map(|x| *x as f64).sum::<f64>(),
            ua.iter().map(|x| *x as f64).sum::<f64>(),
        );
    }
}

#[inline(always)]
fn pass1_any(
    t: &mut AdamState,
    c: &LambConfig,
    inv_bc1: f32,
    inv_sqrt_bc2: f32,
    sums: &mut [(f64, f64)],
) {
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
        // The sums restart at each block (BLOCK is a multiple of 16), so that a piece of
        // the tensor cut on a block sums what the whole tensor does there.
        if i % BLOCK == 0 || i == n {
            sums[(i - 1) / BLOCK] = (pn, un);
            (pn, un) = (0.0, 0.0);
        }
    }
}

/// ‖p‖² and ‖u‖² of a tensor from its blocks' sums, added in block order: the same bits
/// whichever pieces (cut on blocks) the sums came from.
fn norms(sums: &[(f64, f64)]) -> (f64, f64) {
    norms_from((0.0, 0.0), sums)
}

/// [`norms`] continued from `from` (the sums of the blocks before these).
fn norms_from(from: (f64, f64), sums: &[(f64, f64)]) -> (f64, f64) {
    sums.iter().fold(from, |(pn, un), &(p, u)| (pn + p, un + u))
}

/// The trust ratio ‖p‖ / ‖u‖ (1 when a norm is zero).
fn trust_ratio((pn, un): (f64, f64)) -> f32 {
    if pn > 0.0 && un > 0.0 {
        (pn.sqrt() / un.sqrt()) as f32
    } else {
        1.0
    }
}

#[inline(always)]
fn pass2(t: &mut AdamState, c: &LambConfig, inv_bc1: f32, inv_sqrt_bc2: f32, ratio: f32) {
    let (m, v) = (&t.exp_avg[..], &t.exp_avg_sq[..]);
    let n = t.params.len();
    // Blocks from the tensor's end down (each block upwards, so that it vectorizes): the
    // first pass left the end of the tensor in the caches, as in the AVX-512 loop.
    for start in (0..n).step_by(BLOCK).rev() {
        let r = start..(start + BLOCK).min(n);
        super::store::update(&mut t.params, t.grad, r, |p, _, i| {
            p - c.lr * ratio * update(c, m[i], v[i], p, inv_bc1, inv_sqrt_bc2)
        });
    }
}

crate::dispatch! {
    fn first_pass_tensor(t: &mut AdamState, c: &LambConfig, sums: &mut [(f64, f64)]) -> () {
        let (inv_bc1, inv_sqrt_bc2) = inverse_corrections(c, t.step as i32);
        pass1(t, c, inv_bc1, inv_sqrt_bc2, sums)
    }
}

crate::dispatch! {
    fn second_pass_tensor(t: &mut AdamState, c: &LambConfig, ratio: f32) -> () {
        let (inv_bc1, inv_sqrt_bc2) = inverse_corrections(c, t.step as i32);
        pass2(t, c, inv_bc1, inv_sqrt_bc2, ratio)
    }
}

/// Pass 1 of (a piece of) a tensor: f32 parameters and gradient on AVX-512 by the hand-written
/// loop of `avx512` (the same operations, blocks and lane order as `pass1_f32`, so the same
/// bits), anything else by the loops here. The auto-vectorized passes moved 40 B/param at
/// 1.93x the bandwidth bound (25 M parameters, 1 thread).
fn first_pass(isa: Isa, t: &mut AdamState, c: &LambConfig, sums: &mut [(f64, f64)]) {
    #[cfg(target_arch = "x86_64")]
    if let (super::Params::F32(p), super::Grad::F32(g)) = (&t.params, t.grad) {
        let s = hand_constants_of(t.step, c);
        let (m, v) = (&mut *t.exp_avg, &mut *t.exp_avg_sq);
        if super::avx512::lamb_pass1(isa, p, g, (m, v), s, (BLOCK, sums), None) {
            return;
        }
    }
    first_pass_tensor(isa, t, c, sums)
}

/// Pass 2 of (a piece of) a tensor with its trust ratio, as [`first_pass`] chooses.
fn second_pass(isa: Isa, t: &mut AdamState, c: &LambConfig, ratio: f32) {
    #[cfg(target_arch = "x86_64")]
    if let super::Params::F32(p) = &mut t.params {
        let s = hand_constants_of(t.step, c);
        if super::avx512::lamb_pass2(isa, p, t.exp_avg, t.exp_avg_sq, s, c.lr * ratio) {
            return;
        }
    }
    second_pass_tensor(isa, t, c, ratio)
}

/// A tensor that is not cut keeps its updates u between the passes when it has at most this
/// many elements (16 MB of f32 per thread, allocated once and reused).
#[cfg(target_arch = "x86_64")]
const KEEP_MAX: usize = 4 << 20;

#[cfg(target_arch = "x86_64")]
thread_local! {
    /// The updates of the tensor this thread is stepping, between its two passes.
    static KEPT: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Both passes of a tensor that is not cut. With f32 parameters and gradient on AVX-512 (and at
/// most [`KEEP_MAX`] elements) the first pass stores each u in this thread's buffer and the second
/// reads it back: the same u, so the same bits, without the second pass's division and square
/// root per element (the loop was limited by them: LAMB 1.53× its bound at 1 thread against
/// AdamW's 1.34× with one of each, Intel Xeon family 6 model 167), and reading 4 bytes of u
/// where it read 8 of m and v (the buffer stays in the caches for all but the largest tensors).
fn both_passes(isa: Isa, t: &mut AdamState, c: &LambConfig, sums: &mut [(f64, f64)]) {
    #[cfg(target_arch = "x86_64")]
    if t.params.len() <= KEEP_MAX && kept_passes(isa, t, c, sums) {
        return;
    }
    first_pass(isa, t, c, sums);
    second_pass(isa, t, c, trust_ratio(norms(sums)));
}

/// [`both_passes`] through this thread's buffer of updates; `false` (nothing done) unless the
/// parameters and gradient are f32 and `isa` is the AVX-512 level.
#[cfg(target_arch = "x86_64")]
fn kept_passes(isa: Isa, t: &mut AdamState, c: &LambConfig, sums: &mut [(f64, f64)]) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    let (super::Params::F32(p), super::Grad::F32(g)) = (&mut t.params, t.grad) else {
        return false;
    };
    let s = hand_constants_of(t.step, c);
    let (m, v) = (&mut *t.exp_avg, &mut *t.exp_avg_sq);
    KEPT.with_borrow_mut(|kept| {
        if kept.len() < g.len() {
            kept.resize(g.len(), 0.0);
        }
        let u = &mut kept[..g.len()];
        super::avx512::lamb_pass1(isa, p, g, (m, v), s, (BLOCK, sums), Some(u))
            && super::avx512::lamb_pass2_kept(
                isa,
                p,
                u,
                s.prefetch,
                c.lr * trust_ratio(norms(sums)),
            )
    })
}

/// The constants of the hand-written AVX-512 loops for a tensor at `step`.
#[cfg(target_arch = "x86_64")]
fn hand_constants_of(step: u64, c: &LambConfig) -> super::avx512::Lamb {
    let (inv_bc1, inv_sqrt_bc2) = inverse_corrections(c, step as i32);
    super::avx512::Lamb {
        b1: c.beta1,
        b2: c.beta2,
        inv_bc1,
        inv_sqrt_bc2,
        eps: c.eps,
        wd: c.weight_decay,
        prefetch: super::avx512::software_prefetch(),
    }
}

/// A tensor, or a piece of one cut on [`BLOCK`]s, with its blocks' norm sums.
struct Piece<'a> {
    t: AdamState<'a>,
    sums: &'a mut [(f64, f64)],
    tensor: usize,
}

impl super::split::Split for Piece<'_> {
    fn len(&self) -> usize {
        self.t.params.len()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        assert!(mid.is_multiple_of(BLOCK), "LAMB cuts on its norms' blocks");
        let (t0, t1) = self.t.split_at(mid);
        let (s0, s1) = self.sums.split_at_mut(mid / BLOCK);
        (
            Piece {
                t: t0,
                sums: s0,
                tensor: self.tensor,
            },
            Piece {
                t: t1,
                sums: s1,
                tensor: self.tensor,
            },
        )
    }
}

/// One LAMB step of every tensor on `threads` threads. A tensor that is not cut (within a
/// thread's share, or too small to be worth a thread) runs both passes on one thread, the
/// second right after the first (from the end down, where the first left its data in the
/// caches). A larger one — BERT's 23 M-parameter word embedding, a
/// fifth of the model, for which LAMB was made — is cut on blocks into shares: the threads
/// run its pieces' first pass, its norms are added from the pieces' block sums in block order
/// (the bits of one thread), and the threads run the pieces' second pass with its ratio.
pub fn lamb_step(isa: Isa, threads: usize, tensors: &mut [AdamState], c: &LambConfig) {
    for t in tensors.iter_mut() {
        t.step += 1;
    }
    let count = tensors.len();
    let mut sums: Vec<Vec<(f64, f64)>> = tensors
        .iter()
        .map(|t| vec![(0.0, 0.0); t.params.len().div_ceil(BLOCK)])
        .collect();
    let items: Vec<Piece> = tensors
        .iter_mut()
        .zip(sums.iter_mut())
        .enumerate()
        .map(|(tensor, (t, s))| Piece {
            t: t.reborrow(),
            sums: s,
            tensor,
        })
        .collect();
    let mut pieces = super::split::split_large_on(items, threads, BLOCK);
    let mut cut = vec![0usize; count];
    for p in &pieces {
        cut[p.tensor] += 1;
    }
    // Balanced by bytes: a whole tensor moves 40 per element (both passes), a piece 24 (the
    // first). The ranges `for_pieces` hands over are not used.
    let lens: Vec<usize> = pieces
        .iter()
        .map(|p| p.t.params.len() * if cut[p.tensor] == 1 { 40 } else { 24 })
        .collect();
    for_pieces(&mut pieces, &lens, threads, usize::MAX, |p, _| {
        if cut[p.tensor] == 1 {
            both_passes(isa, &mut p.t, c, p.sums);
        } else {
            first_pass(isa, &mut p.t, c, p.sums);
        }
    });
    // The cut tensors: each one's norms from its pieces (consecutive, in order), then the
    // second pass of every piece.
    let mut parts: Vec<Piece> = Vec::new();
    let mut acc: Option<(usize, (f64, f64))> = None;
    let mut ratios = vec![1f32; count];
    for p in pieces.into_iter().filter(|p| cut[p.tensor] > 1) {
        // One fold over the tensor's blocks, continued from piece to piece.
        let from = match acc {
            Some((t, n)) if t == p.tensor => n,
            _ => (0.0, 0.0),
        };
        let n = norms_from(from, p.sums);
        acc = Some((p.tensor, n));
        ratios[p.tensor] = trust_ratio(n);
        parts.push(p);
    }
    if parts.is_empty() {
        return;
    }
    let lens: Vec<usize> = parts.iter().map(|p| p.t.params.len()).collect();
    for_pieces(&mut parts, &lens, threads, usize::MAX, |p, _| {
        second_pass(isa, &mut p.t, c, ratios[p.tensor])
    });
}
