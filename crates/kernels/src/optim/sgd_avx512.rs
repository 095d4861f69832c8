//! The f32 SGD step with momentum written with AVX-512 intrinsics, for the one case where
//! profilednn and torch's `fused=True` move the same bytes (20 per parameter), so only a
//! better loop can be faster. Measured on 25 M parameters at one thread (CPU time, load 9;
//! `sgd_step` before this loop 21.6–23.1 ms): the same loop with separate multiplies and adds
//! as `sgd.rs` 20.8–21.4 ms, with FMAs 20.0, with FMAs and a software prefetch 1 KiB ahead in
//! each of the three streams 18.6–19.6 ms — the prefetch starts the next lines of all three
//! streams before the hardware prefetcher, which follows each stream on its own, catches up.
//! The FMAs round once where the portable loop rounds twice: results differ from it in the
//! last bit (both are checked against torch.optim).

use std::arch::x86_64::*;

/// `p`, `g`, `buf` of one range; the configuration as `sgd.rs` derives it.
#[derive(Clone, Copy)]
pub(super) struct Step {
    pub sign: f32,
    pub wd: f32,
    pub mom: f32,
    pub damp: f32,
    pub lr: f32,
    pub first: bool,
    pub nesterov: bool,
}

/// Prefetch distance in elements (1 KiB of f32).
const AHEAD: usize = 256;

#[inline(always)]
unsafe fn body<const FIRST: bool, const NESTEROV: bool>(
    p: &mut [f32],
    g: &[f32],
    buf: &mut [f32],
    s: Step,
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
    let mut i = 0;
    while i < n {
        // A hint only (no fault past the end): one line of each stream per iteration.
        _mm_prefetch::<_MM_HINT_T0>(pp.wrapping_add(i + AHEAD) as *const i8);
        _mm_prefetch::<_MM_HINT_T0>(gp.wrapping_add(i + AHEAD) as *const i8);
        _mm_prefetch::<_MM_HINT_T0>(bp.wrapping_add(i + AHEAD) as *const i8);
        let m: __mmask16 = if n - i >= 16 {
            0xffff
        } else {
            ((1u32 << (n - i)) - 1) as __mmask16
        };
        let pv = _mm512_maskz_loadu_ps(m, pp.add(i));
        let gv = _mm512_fmadd_ps(
            wd,
            pv,
            _mm512_mul_ps(sign, _mm512_maskz_loadu_ps(m, gp.add(i))),
        );
        let b = if FIRST {
            gv
        } else {
            _mm512_fmadd_ps(
                mom,
                _mm512_maskz_loadu_ps(m, bp.add(i)),
                _mm512_mul_ps(damp, gv),
            )
        };
        _mm512_mask_storeu_ps(bp.add(i), m, b);
        let u = if NESTEROV {
            _mm512_fmadd_ps(mom, b, gv)
        } else {
            b
        };
        _mm512_mask_storeu_ps(pp.add(i), m, _mm512_fnmadd_ps(lr, u, pv));
        i += 16;
    }
}

#[target_feature(enable = "avx512f,fma")]
unsafe fn run(p: &mut [f32], g: &[f32], buf: &mut [f32], s: Step) {
    match (s.first, s.nesterov) {
        (true, true) => body::<true, true>(p, g, buf, s),
        (true, false) => body::<true, false>(p, g, buf, s),
        (false, true) => body::<false, true>(p, g, buf, s),
        (false, false) => body::<false, false>(p, g, buf, s),
    }
}

/// The step over `p`, `g`, `buf` (equal lengths) when `isa` is the AVX-512 level; `false`
/// (nothing done) otherwise.
pub(super) fn step(isa: crate::Isa, p: &mut [f32], g: &[f32], buf: &mut [f32], s: Step) -> bool {
    if isa.level() != crate::Level::Avx512 {
        return false;
    }
    // SAFETY: an `Isa` of the AVX-512 level exists only where avx512f was detected (see
    // `dispatch`); `body` asserts the three lengths are equal and stays below them.
    unsafe { run(p, g, buf, s) };
    true
}
