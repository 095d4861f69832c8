//! The f32 SGD (with momentum) and Adam/AdamW (without amsgrad) steps, and LAMB's two passes,
//! written with AVX-512 intrinsics, for the case where profilednn and torch's `fused=True` move
//! the same bytes (SGD 20, AdamW 28 per parameter), so only a better loop can be faster.
//! Measured on an Intel Xeon (family 6 model 207), 25 M parameters at one thread (CPU time,
//! load 9; `sgd_step` before this loop 21.6–23.1 ms): an intrinsics loop 20.0–20.8 ms, with a
//! software prefetch 1 KiB ahead in each stream 18.6–19.6 ms — the prefetch starts the next
//! lines of all streams before the hardware prefetcher, which follows each stream on its own,
//! catches up. The operations are those of `sgd.rs`/`adam.rs`/`lamb.rs` in the same order
//! (separate multiplies and adds, no FMA), so the bits equal the portable loop's: an f32 run
//! and a bf16 run with an f32 master stay identical.
//!
//! The prefetch is chosen per CPU (`software_prefetch`): on an AMD EPYC Zen 4 (family 25 model
//! 17, 2 vCPUs) the same loops were slower with it at one thread (25 M parameters, median of
//! 22 steps, three interleaved rounds, ms without / with: SGD 13.4–13.5 / 13.3–14.6, AdamW
//! 16.8–17.6 / 17.4–18.0, LAMB 26.4–28.0 / 29.7–31.2) and equal at two: its hardware
//! prefetchers keep up with these streams, and the extra instructions only take load slots.
//! Intel keeps it (the gain above).

use std::arch::x86_64::*;

/// Whether the loops issue software prefetches on this CPU: `PROFILEDNN_PREFETCH=0|1` if set,
/// else on everywhere but AMD's cores (see the module doc for what was measured).
pub(super) fn software_prefetch() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        crate::env::switch("PROFILEDNN_PREFETCH", "1", "0", || !profilednn_isa::amd())
    })
}

/// Runs `f(i, mask)` over `0..n` a 64-byte line of f32 at a time (the last one masked), with a
/// prefetch `AHEAD` elements ahead in each stream of `streams` when `PREFETCH`. A constant, so
/// that each choice is its own loop, chosen once by the caller's `#[target_feature]` function:
/// a closure called from two places in one body is not inlined, and outside such a function
/// its intrinsics become calls (10× slower, seen).
#[inline(always)]
unsafe fn lines<const S: usize, const PREFETCH: bool>(
    n: usize,
    streams: [*const f32; S],
    mut f: impl FnMut(usize, __mmask16),
) {
    let mut i = 0;
    while i < n {
        if PREFETCH {
            for s in streams {
                // A hint only (no fault past the end): one line of each stream per iteration.
                _mm_prefetch::<_MM_HINT_T0>(s.wrapping_add(i + AHEAD) as *const i8);
            }
        }
        let m: __mmask16 = if n - i >= 16 {
            0xffff
        } else {
            ((1u32 << (n - i)) - 1) as __mmask16
        };
        f(i, m);
        i += 16;
    }
}

/// [`lines`] from the last line down to the first (the masked tail first), prefetching
/// `AHEAD` elements below. LAMB's second pass runs this way: the first pass left the end of
/// the tensor in the caches, and a second pass from the end reads that part before its own
/// loads evict it, where one from the start evicts it before reaching it. Measured on an AMD
/// EPYC Zen 4 (2 vCPUs; 25 M parameters, 60 alternating steps, caches flushed before each):
/// 0.91–0.95× the time at 1 thread, 0.92–0.98× at 2 for the bench's 39 tensors, 0.86–0.92×
/// for one 25 M tensor; a plain read of 24–48 MB after a forward read of it ran 1.1–1.4×
/// faster backwards. The pass is element-wise, so the bits are the same either way.
#[inline(always)]
unsafe fn lines_down<const S: usize, const PREFETCH: bool>(
    n: usize,
    streams: [*const f32; S],
    mut f: impl FnMut(usize, __mmask16),
) {
    let mut i = n - n % 16;
    if i < n {
        f(i, ((1u32 << (n - i)) - 1) as __mmask16);
    }
    while i > 0 {
        i -= 16;
        if PREFETCH {
            for s in streams {
                _mm_prefetch::<_MM_HINT_T0>(s.wrapping_add(i).wrapping_sub(AHEAD) as *const i8);
            }
        }
        f(i, 0xffff);
    }
}

/// The SGD configuration as `sgd.rs` derives it.
#[derive(Clone, Copy)]
pub(super) struct Sgd {
    pub sign: f32,
    pub wd: f32,
    pub mom: f32,
    pub damp: f32,
    pub lr: f32,
    pub first: bool,
    pub nesterov: bool,
    /// Software prefetch (`software_prefetch()`; the tests run both).
    pub prefetch: bool,
}

impl Sgd {
    /// Nothing to apply but momentum: not maximizing, no weight decay, no dampening (`sgd.rs`
    /// leaves out the same operations then, so the bits stay equal).
    fn plain(&self) -> bool {
        super::plain(self.sign, self.wd, self.damp)
    }
}

/// Prefetch distance in elements (1 KiB of f32).
const AHEAD: usize = 256;

/// The SGD step. `PLAIN`: no sign, weight decay or dampening to apply (`Sgd::plain`), so the
/// loop leaves out their three multiplies and an add. The loop is memory-bound, yet on an Intel
/// Xeon guest (family 6 model 167, 25 M parameters, one thread) a loop with them ran 3-4 %
/// longer than one without in a Rust harness (medians of 21: 21.7-22.0 ms against 21.0-21.2);
/// the Python step, two builds alternated, took 0.98-1.00x the time with `PLAIN`.
#[inline(always)]
unsafe fn sgd_body<const FIRST: bool, const NESTEROV: bool, const PLAIN: bool, const PF: bool>(
    p: &mut [f32],
    g: &[f32],
    buf: &mut [f32],
    s: Sgd,
) {
    assert!(g.len() == p.len() && buf.len() == p.len());
    let n = p.len();
    let (pp, gp, bp) = (p.as_mut_ptr(), g.as_ptr(), buf.as_mut_ptr());
    let (sign, wd, mom, damp, lr) = (
        _mm512_set1_ps(s.sign),
        _mm512_set1_ps(s.wd),
        _mm512_set1_ps(s.mom),
        _mm512_set1_ps(s.damp),
        _mm512_set1_ps(s.lr),
    );
    lines::<_, PF>(n, [pp as *const f32, gp, bp as *const f32], |i, m| {
        let pv = _mm512_maskz_loadu_ps(m, pp.add(i));
        let gv = if PLAIN {
            _mm512_maskz_loadu_ps(m, gp.add(i))
        } else {
            _mm512_add_ps(
                _mm512_mul_ps(sign, _mm512_maskz_loadu_ps(m, gp.add(i))),
                _mm512_mul_ps(wd, pv),
            )
        };
        let b = if FIRST {
            gv
        } else {
            let dg = if PLAIN { gv } else { _mm512_mul_ps(damp, gv) };
            _mm512_add_ps(_mm512_mul_ps(mom, _mm512_maskz_loadu_ps(m, bp.add(i))), dg)
        };
        _mm512_mask_storeu_ps(bp.add(i), m, b);
        let u = if NESTEROV {
            _mm512_add_ps(gv, _mm512_mul_ps(mom, b))
        } else {
            b
        };
        _mm512_mask_storeu_ps(pp.add(i), m, _mm512_sub_ps(pv, _mm512_mul_ps(lr, u)));
    });
}

#[target_feature(enable = "avx512f")]
unsafe fn sgd_run(p: &mut [f32], g: &[f32], buf: &mut [f32], s: Sgd) {
    match (s.plain(), s.prefetch) {
        (true, true) => sgd_flags::<true, true>(p, g, buf, s),
        (true, false) => sgd_flags::<true, false>(p, g, buf, s),
        (false, true) => sgd_flags::<false, true>(p, g, buf, s),
        (false, false) => sgd_flags::<false, false>(p, g, buf, s),
    }
}

#[inline(always)]
unsafe fn sgd_flags<const PLAIN: bool, const PF: bool>(
    p: &mut [f32],
    g: &[f32],
    buf: &mut [f32],
    s: Sgd,
) {
    match (s.first, s.nesterov) {
        (true, true) => sgd_body::<true, true, PLAIN, PF>(p, g, buf, s),
        (true, false) => sgd_body::<true, false, PLAIN, PF>(p, g, buf, s),
        (false, true) => sgd_body::<false, true, PLAIN, PF>(p, g, buf, s),
        (false, false) => sgd_body::<false, false, PLAIN, PF>(p, g, buf, s),
    }
}

/// The step over `p`, `g`, `buf` (equal lengths) when `isa` is the AVX-512 level; `false`
/// (nothing done) otherwise.
pub(super) fn sgd(isa: crate::Isa, p: &mut [f32], g: &[f32], buf: &mut [f32], s: Sgd) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    // SAFETY: an `Isa` of the AVX-512 level exists only where avx512f was detected (see
    // `dispatch`); `sgd_body` asserts the three lengths are equal and stays below them.
    unsafe { sgd_run(p, g, buf, s) };
    true
}

/// Adam's moments of one line (the lanes of `k`) at `mp`/`vp`, updated and stored, with
/// `c` = [1 − β1, β2, 1 − β2]: m + (1 − β1)·(g − m) and v·β2 + ((1 − β2)·g)·g, as `adam.rs`.
#[inline(always)]
unsafe fn moments(
    mp: *mut f32,
    vp: *mut f32,
    k: __mmask16,
    gv: __m512,
    c: [__m512; 3],
) -> (__m512, __m512) {
    let m0 = _mm512_maskz_loadu_ps(k, mp);
    let m = _mm512_add_ps(m0, _mm512_mul_ps(c[0], _mm512_sub_ps(gv, m0)));
    let v = _mm512_add_ps(
        _mm512_mul_ps(_mm512_maskz_loadu_ps(k, vp), c[1]),
        _mm512_mul_ps(_mm512_mul_ps(c[2], gv), gv),
    );
    _mm512_mask_storeu_ps(mp, k, m);
    _mm512_mask_storeu_ps(vp, k, v);
    (m, v)
}

/// The Adam/AdamW configuration of one step as `adam.rs` derives it.
#[derive(Clone, Copy)]
pub(super) struct Adam {
    pub sign: f32,
    pub wd: f32,
    /// 1 − lr·wd (decoupled), else 1.
    pub wd_mul: f32,
    pub decoupled: bool,
    pub b1: f32,
    pub b2: f32,
    pub step_size: f32,
    pub bc2_sqrt: f32,
    pub eps: f32,
    /// Software prefetch (`software_prefetch()`; the tests run both).
    pub prefetch: bool,
}

#[inline(always)]
unsafe fn adam_body<const DECOUPLED: bool, const PF: bool>(
    p: &mut [f32],
    g: &[f32],
    m_all: &mut [f32],
    v_all: &mut [f32],
    s: Adam,
) {
    let n = p.len();
    assert!(g.len() == n && m_all.len() == n && v_all.len() == n);
    let (pp, gp, mp, vp) = (
        p.as_mut_ptr(),
        g.as_ptr(),
        m_all.as_mut_ptr(),
        v_all.as_mut_ptr(),
    );
    let c = |v: f32| _mm512_set1_ps(v);
    let (sign, wd, wd_mul, b2, step_size, eps) = (
        c(s.sign),
        c(s.wd),
        c(s.wd_mul),
        c(s.b2),
        c(s.step_size),
        c(s.eps),
    );
    let (one_b1, one_b2, bc2) = (c(1.0 - s.b1), c(1.0 - s.b2), c(s.bc2_sqrt));
    lines::<_, PF>(
        n,
        [pp as *const f32, gp, mp as *const f32, vp as *const f32],
        |i, k| {
            let pv = _mm512_maskz_loadu_ps(k, pp.add(i));
            let gs = _mm512_mul_ps(sign, _mm512_maskz_loadu_ps(k, gp.add(i)));
            let (pv, gv) = if DECOUPLED {
                (_mm512_mul_ps(pv, wd_mul), gs)
            } else {
                (pv, _mm512_add_ps(gs, _mm512_mul_ps(wd, pv)))
            };
            let (m, v) = moments(mp.add(i), vp.add(i), k, gv, [one_b1, b2, one_b2]);
            // Divisions as torch writes them (the loop is memory-bound: they cost no time).
            let den = _mm512_add_ps(_mm512_div_ps(_mm512_sqrt_ps(v), bc2), eps);
            let u = _mm512_sub_ps(pv, _mm512_mul_ps(step_size, _mm512_div_ps(m, den)));
            _mm512_mask_storeu_ps(pp.add(i), k, u);
        },
    );
}

#[target_feature(enable = "avx512f")]
unsafe fn adam_run(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], s: Adam) {
    match (s.decoupled, s.prefetch) {
        (true, true) => adam_body::<true, true>(p, g, m, v, s),
        (true, false) => adam_body::<true, false>(p, g, m, v, s),
        (false, true) => adam_body::<false, true>(p, g, m, v, s),
        (false, false) => adam_body::<false, false>(p, g, m, v, s),
    }
}

/// The Adam/AdamW step over `p`, `g`, `m`, `v` (equal lengths) when `isa` is the AVX-512
/// level; `false` (nothing done) otherwise.
pub(super) fn adam(
    isa: crate::Isa,
    p: &mut [f32],
    g: &[f32],
    m: &mut [f32],
    v: &mut [f32],
    s: Adam,
) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    // SAFETY: as in `sgd`; `adam_body` asserts the four lengths are equal and stays below them.
    unsafe { adam_run(p, g, m, v, s) };
    true
}

/// LAMB's constants for one tensor as `lamb.rs` derives them.
#[derive(Clone, Copy)]
pub(super) struct Lamb {
    pub b1: f32,
    pub b2: f32,
    pub inv_bc1: f32,
    pub inv_sqrt_bc2: f32,
    pub eps: f32,
    pub wd: f32,
    /// Software prefetch (`software_prefetch()`; the tests run both).
    pub prefetch: bool,
}

/// `lamb.rs`'s `update`: (m·inv_bc1) / (sqrt(v)·inv_sqrt_bc2 + eps) + wd·p, the same operations.
#[inline(always)]
unsafe fn lamb_update(m: __m512, v: __m512, p: __m512, s: &Lamb) -> __m512 {
    let c = |v: f32| _mm512_set1_ps(v);
    let den = _mm512_add_ps(
        _mm512_mul_ps(_mm512_sqrt_ps(v), c(s.inv_sqrt_bc2)),
        c(s.eps),
    );
    _mm512_add_ps(
        _mm512_div_ps(_mm512_mul_ps(m, c(s.inv_bc1)), den),
        _mm512_mul_ps(c(s.wd), p),
    )
}

#[target_feature(enable = "avx512f")]
unsafe fn lamb_pass1_run<const PF: bool>(
    p: &[f32],
    g: &[f32],
    ms: &mut [f32],
    vs: &mut [f32],
    s: Lamb,
    (block, sums): (usize, &mut [(f64, f64)]),
    kept: Option<&mut [f32]>,
) {
    let n = p.len();
    assert!(g.len() == n && ms.len() == n && vs.len() == n && block.is_multiple_of(16));
    assert!(sums.len() == n.div_ceil(block));
    assert!(kept.as_ref().is_none_or(|u| u.len() == n));
    let up = kept.map(|u| u.as_mut_ptr());
    let (pp, gp, mp, vp) = (p.as_ptr(), g.as_ptr(), ms.as_mut_ptr(), vs.as_mut_ptr());
    let (b1, b2) = (_mm512_set1_ps(1.0 - s.b1), _mm512_set1_ps(s.b2));
    let one_b2 = _mm512_set1_ps(1.0 - s.b2);
    let lanes = |a: __m512| {
        let mut l = [0f32; 16];
        _mm512_storeu_ps(l.as_mut_ptr(), a);
        l.iter().map(|x| *x as f64).sum::<f64>()
    };
    let mut b = 0;
    while b < n {
        let len = block.min(n - b);
        let (mut pa, mut ua) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let (pb, gb, mb, vb) = (pp.add(b), gp.add(b), mp.add(b), vp.add(b));
        lines::<_, PF>(len, [pb, gb, mb as *const f32, vb as *const f32], |i, k| {
            let pv = _mm512_maskz_loadu_ps(k, pb.add(i));
            let gv = _mm512_maskz_loadu_ps(k, gb.add(i));
            let (m, v) = moments(mb.add(i), vb.add(i), k, gv, [b1, b2, one_b2]);
            let u = lamb_update(m, v, pv, &s);
            if let Some(up) = up {
                _mm512_mask_storeu_ps(up.add(b + i), k, u);
            }
            // Lanes outside `k` are 0 in every input, so they add +0.
            pa = _mm512_add_ps(pa, _mm512_mul_ps(pv, pv));
            ua = _mm512_add_ps(ua, _mm512_mul_ps(u, u));
        });
        sums[b / block] = (lanes(pa), lanes(ua));
        b += len;
    }
}

/// LAMB's first pass (m and v updated; Σp² and Σu² summed per `block` elements in 16 lanes,
/// then in f64 in lane order, into `sums[block index]`, as `lamb.rs`'s f32 loop) when `isa` is
/// the AVX-512 level; `false` otherwise. With `kept`, each u is stored there too, for
/// [`lamb_pass2_kept`].
pub(super) fn lamb_pass1(
    isa: crate::Isa,
    p: &[f32],
    g: &[f32],
    (m, v): (&mut [f32], &mut [f32]),
    s: Lamb,
    (block, sums): (usize, &mut [(f64, f64)]),
    kept: Option<&mut [f32]>,
) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    // SAFETY: as in `sgd`; `lamb_pass1_run` asserts the lengths are equal and stays below them.
    unsafe {
        if s.prefetch {
            lamb_pass1_run::<true>(p, g, m, v, s, (block, sums), kept)
        } else {
            lamb_pass1_run::<false>(p, g, m, v, s, (block, sums), kept)
        }
    };
    true
}

#[target_feature(enable = "avx512f")]
unsafe fn lamb_pass2_run<const PF: bool>(
    p: &mut [f32],
    ms: &[f32],
    vs: &[f32],
    s: Lamb,
    lr_ratio: f32,
) {
    let n = p.len();
    assert!(ms.len() == n && vs.len() == n);
    let (pp, mp, vp) = (p.as_mut_ptr(), ms.as_ptr(), vs.as_ptr());
    let lr = _mm512_set1_ps(lr_ratio);
    lines_down::<_, PF>(n, [pp as *const f32, mp, vp], |i, k| {
        let pv = _mm512_maskz_loadu_ps(k, pp.add(i));
        let u = lamb_update(
            _mm512_maskz_loadu_ps(k, mp.add(i)),
            _mm512_maskz_loadu_ps(k, vp.add(i)),
            pv,
            &s,
        );
        _mm512_mask_storeu_ps(pp.add(i), k, _mm512_sub_ps(pv, _mm512_mul_ps(lr, u)));
    });
}

/// LAMB's second pass, p − (lr·ratio)·u, when `isa` is the AVX-512 level; `false` otherwise.
pub(super) fn lamb_pass2(
    isa: crate::Isa,
    p: &mut [f32],
    m: &[f32],
    v: &[f32],
    s: Lamb,
    lr_ratio: f32,
) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    // SAFETY: as in `sgd`; `lamb_pass2_run` asserts the lengths are equal and stays below them.
    unsafe {
        if s.prefetch {
            lamb_pass2_run::<true>(p, m, v, s, lr_ratio)
        } else {
            lamb_pass2_run::<false>(p, m, v, s, lr_ratio)
        }
    };
    true
}

#[target_feature(enable = "avx512f")]
unsafe fn lamb_pass2_kept_run<const PF: bool>(p: &mut [f32], u: &[f32], lr_ratio: f32) {
    let n = p.len();
    assert!(u.len() == n);
    let (pp, up) = (p.as_mut_ptr(), u.as_ptr());
    let lr = _mm512_set1_ps(lr_ratio);
    lines_down::<_, PF>(n, [pp as *const f32, up], |i, k| {
        let pv = _mm512_maskz_loadu_ps(k, pp.add(i));
        let u = _mm512_maskz_loadu_ps(k, up.add(i));
        _mm512_mask_storeu_ps(pp.add(i), k, _mm512_sub_ps(pv, _mm512_mul_ps(lr, u)));
    });
}

/// LAMB's second pass from the updates the first pass kept (`lamb_pass1`'s `kept`):
/// p − (lr·ratio)·u with the same u, so the same bits as [`lamb_pass2`], without its second
/// division and square root per element and reading u instead of m and v.
pub(super) fn lamb_pass2_kept(
    isa: crate::Isa,
    p: &mut [f32],
    u: &[f32],
    prefetch: bool,
    lr_ratio: f32,
) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    // SAFETY: as in `sgd`; `lamb_pass2_kept_run` asserts the lengths are equal and stays below.
    unsafe {
        if prefetch {
            lamb_pass2_kept_run::<true>(p, u, lr_ratio)
        } else {
            lamb_pass2_kept_run::<false>(p, u, lr_ratio)
        }
    };
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Isa, Level};

    /// Values with every kind of lane a step meets: signs, magnitudes over many binades, zeros.
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i % 97 == 0 {
                    0.0
                } else {
                    (x as f32 / u32::MAX as f32 - 0.5) * (1 << (i % 9)) as f32
                }
            })
            .collect()
    }

    /// One SGD step of the portable loop from `p`, `b` (parameters and buffer after it).
    fn portable_sgd(
        p: &[f32],
        g: &[f32],
        b: &[f32],
        first: bool,
        c: &super::super::SgdConfig,
    ) -> (Vec<f32>, Vec<f32>) {
        let (mut p, mut b) = (p.to_vec(), b.to_vec());
        super::super::sgd_step(
            Isa::PORTABLE,
            1,
            &mut [super::super::SgdTensor {
                params: super::super::Params::F32(&mut p),
                grad: super::super::Grad::F32(g),
                momentum_buffer: Some(&mut b),
                first,
            }],
            c,
        );
        (p, b)
    }

    /// SGD without weight decay or dampening (`PLAIN`: the operations left out), with and
    /// without the prefetch, Nesterov or not, first step or not: the portable loop's bits.
    #[test]
    fn plain_sgd_writes_the_portable_bits() {
        let Some(isa) = Isa::of(Level::Avx512) else {
            println!("SKIPPED: no AVX-512 on this CPU (the hand-written loops do not run)");
            return;
        };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for n in [1usize, 17, 1000, 4099] {
            let (p0, b0) = (values(n, 5), values(n, 6));
            // Zero gradients of both signs among the others: a full loop's +0·p turns a −0 to +0.
            let g: Vec<f32> = values(n, 7)
                .iter()
                .enumerate()
                .map(|(i, v)| if i % 7 == 3 { -0.0 } else { *v })
                .collect();
            for (first, nesterov) in [(false, false), (false, true), (true, false), (true, true)] {
                let c = super::super::SgdConfig {
                    lr: 0.01,
                    momentum: 0.9,
                    dampening: 0.0,
                    weight_decay: 0.0,
                    nesterov,
                    maximize: false,
                };
                let (pr, br) = portable_sgd(&p0, &g, &b0, first, &c);
                for prefetch in [false, true] {
                    let (mut p, mut b) = (p0.clone(), b0.clone());
                    let s = Sgd {
                        sign: 1.0,
                        wd: 0.0,
                        mom: c.momentum,
                        damp: 1.0,
                        lr: c.lr,
                        first,
                        nesterov,
                        prefetch,
                    };
                    assert!(s.plain());
                    assert!(sgd(isa, &mut p, &g, &mut b, s));
                    let what =
                        format!("n {n}, first {first}, nesterov {nesterov}, prefetch {prefetch}");
                    assert_eq!(bits(&p), bits(&pr), "parameters, {what}");
                    assert_eq!(bits(&b), bits(&br), "buffer, {what}");
                }
            }
        }
    }

    /// The software prefetch is a hint: with and without it every loop writes the same bits,
    /// and those of the portable loops (`sgd.rs`, `adam.rs`, `lamb.rs` at the portable level).
    /// The public steps take one choice per CPU; this runs the other one too.
    #[test]
    fn prefetch_or_not_the_loops_write_the_portable_bits() {
        let Some(isa) = Isa::of(Level::Avx512) else {
            println!("SKIPPED: no AVX-512 on this CPU (the hand-written loops do not run)");
            return;
        };
        // Lengths that end inside a line, and one longer than the prefetch distance.
        for n in [1usize, 17, 1000, 4099] {
            let (p0, g, b0, v0) = (values(n, 1), values(n, 2), values(n, 3), values(n, 4));
            let v0: Vec<f32> = v0.iter().map(|v| v * v).collect();
            // SGD with momentum, Nesterov and weight decay, a second step (the buffer is read).
            let c = super::super::SgdConfig {
                lr: 0.01,
                momentum: 0.9,
                dampening: 0.1,
                weight_decay: 1e-4,
                nesterov: true,
                maximize: false,
            };
            let (pr, br) = portable_sgd(&p0, &g, &b0, false, &c);
            // Adam (coupled weight decay) at step 3, against the portable loop.
            let ac = super::super::AdamConfig {
                lr: 1e-3,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.01,
                decoupled: false,
                amsgrad: false,
                maximize: false,
            };
            let (mut pa, mut ma, mut va) = (p0.clone(), b0.clone(), v0.clone());
            super::super::adam_step(
                Isa::PORTABLE,
                1,
                &mut [super::super::AdamState {
                    params: super::super::Params::F32(&mut pa),
                    grad: super::super::Grad::F32(&g),
                    exp_avg: &mut ma,
                    exp_avg_sq: &mut va,
                    max_exp_avg_sq: None,
                    step: 2,
                }],
                &ac,
            );
            let (bc1, bc2) = (
                1.0 - (ac.beta1 as f64).powi(3),
                1.0 - (ac.beta2 as f64).powi(3),
            );
            for prefetch in [false, true] {
                let (mut p, mut b) = (p0.clone(), b0.clone());
                let s = Sgd {
                    sign: 1.0,
                    wd: c.weight_decay,
                    mom: c.momentum,
                    damp: 1.0 - c.dampening,
                    lr: c.lr,
                    first: false,
                    nesterov: true,
                    prefetch,
                };
                assert!(sgd(isa, &mut p, &g, &mut b, s));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&p),
                    bits(&pr),
                    "SGD parameters, n {n}, prefetch {prefetch}"
                );
                assert_eq!(
                    bits(&b),
                    bits(&br),
                    "SGD buffer, n {n}, prefetch {prefetch}"
                );

                let (mut p, mut m, mut v) = (p0.clone(), b0.clone(), v0.clone());
                let s = Adam {
                    sign: 1.0,
                    wd: ac.weight_decay,
                    wd_mul: 1.0,
                    decoupled: false,
                    b1: ac.beta1,
                    b2: ac.beta2,
                    step_size: (ac.lr as f64 / bc1) as f32,
                    bc2_sqrt: bc2.sqrt() as f32,
                    eps: ac.eps,
                    prefetch,
                };
                assert!(adam(isa, &mut p, &g, &mut m, &mut v, s));
                assert_eq!(
                    bits(&p),
                    bits(&pa),
                    "Adam parameters, n {n}, prefetch {prefetch}"
                );
                assert_eq!(bits(&m), bits(&ma), "Adam m, n {n}, prefetch {prefetch}");
                assert_eq!(bits(&v), bits(&va), "Adam v, n {n}, prefetch {prefetch}");
            }
            // LAMB: both passes give the same bits and norms with and without the prefetch,
            // and with the updates kept between the passes (`lamb_pass2_kept`) or recomputed.
            let l = |prefetch| Lamb {
                b1: 0.9,
                b2: 0.999,
                inv_bc1: 10.0,
                inv_sqrt_bc2: 31.6,
                eps: 1e-6,
                wd: 0.01,
                prefetch,
            };
            let run = |prefetch: bool, keep: bool| {
                let (mut p, mut m, mut v) = (p0.clone(), b0.clone(), v0.clone());
                let mut sums = vec![(0f64, 0f64); n.div_ceil(64)];
                let mut u = vec![f32::NAN; n];
                assert!(lamb_pass1(
                    isa,
                    &p,
                    &g,
                    (&mut m, &mut v),
                    l(prefetch),
                    (64, &mut sums),
                    keep.then_some(&mut u[..]),
                ));
                if keep {
                    assert!(lamb_pass2_kept(isa, &mut p, &u, prefetch, 1e-3));
                } else {
                    assert!(lamb_pass2(isa, &mut p, &m, &v, l(prefetch), 1e-3));
                }
                (
                    sums.iter()
                        .map(|(a, b)| (a.to_bits(), b.to_bits()))
                        .collect::<Vec<_>>(),
                    [p, m, v].map(|x| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>()),
                )
            };
            let plain = run(false, false);
            assert_eq!(plain, run(true, false), "LAMB, n {n}");
            assert_eq!(plain, run(false, true), "LAMB kept, n {n}");
            assert_eq!(plain, run(true, true), "LAMB kept with prefetch, n {n}");
        }
    }
}
