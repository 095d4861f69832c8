//! The reduced passes written with AVX-512 intrinsics: f32 or bf16 logits, dense f32/bf16 or
//! class-index targets, γ ∈ {0, 1, 2}; the loss reduced and (for training) the gradient × a
//! scalar written in the same pass. Per-element loss outputs and per-element incoming
//! gradients (reduction "none") stay on the portable loop of `kernel.rs`.
//!
//! Why by hand: the auto-vectorized loop of `kernel.rs` is limited by its arithmetic, not by
//! memory (2.2 ns per element on one core against ~0.6 ns for the bytes). Three things the
//! compiler will not do on its own make the difference here:
//! * `vrcp14ps` + one Newton step instead of `vdivps` (a 512-bit division occupies its port
//!   for ~10 cycles; the refined reciprocal is within 1 ulp of 1/(1+e), which is all the
//!   formula needs);
//! * `vscalefps` for the 2ⁿ of `exp` (no exponent-bit building, no two-step scaling);
//! * non-temporal stores of the gradient when it is larger than the caches, so writing it does
//!   not first read it (a third less memory traffic for a fresh or reused full-size buffer);
//! * with bf16 logits, a table lookup for chunks whose targets are all 0 (nearly all of a
//!   detection head's): the logit has only 65 536 values, so loss and gradient are gathered
//!   instead of computed (`focal16_t0_table`), which halves the time of this pass at one thread;
//!   a line of 32 such targets is recognised by one test of its raw bits (`Elem::zero32`, or no
//!   label inside it), so its targets are not widened and compared as f32 either: 0.91–0.96×
//!   the time, bf16 RetinaNet head (63.4 M logits) on AMD EPYC Zen 4, 31 pairs alternated in
//!   one process (dense fwd+bwd 0.925 at 1 thread, 0.944 at 2; class labels 0.906, 0.912;
//!   forward alone 0.928, 0.960); such a line is looked up whole (`line32_t0_table`), on AMD's
//!   cores with 32 scalar loads instead of four gathers (`scalar_lookups`: 0.76–0.96× the time
//!   on Zen 4), its (loss, gradient) pairs summed as gathered, without separating them.
//!
//! The sums are kept per fixed block of elements (dense) or per group of rows (classes), each
//! term in a lane fixed by its position in the block (a looked-up line's term j in lane
//! 2·(j mod 8), the others in lane j mod 16) and the lanes added in lane order, so the total is
//! the same for any thread count (not the portable loop's bits: its lanes are j mod 16).

use std::arch::x86_64::*;

use super::elem::{GAMMA_0, GAMMA_1, GAMMA_2};
use super::{Targets, Tensor, TensorMut};

const W: usize = 16;
/// Above this many gradient bytes per call, stores bypass the caches.
const STREAM_BYTES: usize = 4 << 20;

/// How far ahead (in elements) the bf16 line loop prefetches its logits: 2 KB. On an AMD EPYC
/// Zen 4 (RetinaNet head bf16, builds with and without alternated): 0.85 / 0.89 of the time
/// without, dense fwd+bwd / class labels at 1 thread, 0.87–0.92 / 0.81–0.87 at 2; 4 KB
/// ahead read 0.93–1.01 dense; prefetching the dense targets too was not better (0.90–1.06).
const PREFETCH_AHEAD: usize = 1024;

/// How far ahead (in elements) bf16 dense targets are prefetched where [`target_prefetch`] says
/// so: 4 KB. (f32 targets beside bf16 logits are not prefetched: a line of 32 logits has two
/// lines of them, and that form was not measured.) On an Intel Xeon guest (family 6 model 167,
/// RetinaNet head bf16, dense targets; the forms alternated process by process, medians of 11):
/// forward 0.82× the time without, fwd+bwd 0.87× at 2 threads and 0.90× at 1 with 2 KB ahead;
/// 4 KB ahead a further 0.95× forward; 8 KB, or the logits 4 KB ahead as well, no better.
const TARGET_PREFETCH_AHEAD: usize = 2048;

/// Whether the loop over bf16 dense targets prefetches them too: `PROFILEDNN_FOCAL_PREFETCH_TARGETS=1|0`
/// if set, else on everywhere but AMD's cores. Intel's hardware prefetchers left the second
/// stream behind while the lookups took the load ports (measured above); on an AMD EPYC Zen 4
/// the same prefetch was measured 0.90–1.06× the time without (see `PREFETCH_AHEAD`): no gain
/// shown, so AMD keeps the loop as it was. The targets are only read sooner: the same bits.
fn target_prefetch() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        crate::env::switch("PROFILEDNN_FOCAL_PREFETCH_TARGETS", "1", "0", || {
            !profilednn_isa::amd()
        })
    })
}

/// How far ahead (in bytes) the f32 loop prefetches its logits and dense targets, a line of
/// each per chunk: 4 KB. One thread's stream of f32 logits took the arithmetic and the memory
/// in turn, not side by side; started early, the loads overlap the arithmetic (0.75× the time
/// at one thread on an Intel Xeon: docs/measurements-kernels.md).
const F32_PREFETCH_BYTES: usize = 4096;

/// Whether the f32 loop prefetches ([`F32_PREFETCH_BYTES`]): `PROFILEDNN_FOCAL_PREFETCH_F32=1|0`
/// if set, else on everywhere but AMD's cores, where it was not measured (the optimizers' f32
/// prefetches were slower there: their hardware prefetchers keep up on their own). A hint only:
/// the same bits either way.
fn f32_prefetch() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        crate::env::switch("PROFILEDNN_FOCAL_PREFETCH_F32", "1", "0", || {
            !profilednn_isa::amd()
        })
    })
}

/// Per-call constants broadcast once.
#[derive(Clone, Copy)]
struct K {
    zero: __m512,
    one: __m512,
    two: __m512,
    /// α_t·scale = at0 + t·at1 (the gradient's scale folded into the class weight).
    at0: __m512,
    at1: __m512,
    /// α_t = a0 + t·a1 for the loss.
    a0: __m512,
    a1: __m512,
    /// bf16 logits: the all-zero-target values of every bf16 bit pattern (`table::t0_table`).
    tab: *const f32,
    /// Whether a line of all-zero targets looks its 32 logits up with scalar loads rather than
    /// gathers ([`scalar_lookups`]).
    scalar: bool,
    /// Whether the dense-target loop prefetches its targets ([`target_prefetch`]).
    prefetch_targets: bool,
    /// Whether the f32 loop prefetches its logits and dense targets ([`f32_prefetch`]).
    prefetch_f32: bool,
}

/// Whether a line of 32 bf16 logits with all-zero targets is looked up with 32 scalar loads
/// instead of four 8-element gathers: `PROFILEDNN_FOCAL_LOOKUP=scalar|gather` if set, else
/// scalar on AMD's cores. Measured on an AMD EPYC Zen 4 (RetinaNet head 240 174×264 bf16, the
/// two forms alternated call by call in one process, medians of the pairwise ratios): scalar
/// 0.76 / 0.78 of the gathers' time for dense fwd+bwd / forward at 1 thread, 0.79 / 0.76 at 2,
/// class labels 0.82–0.96 — there the gathers were about half the loop (without any lookup it
/// ran 0.45× the time), ~9.5 cycles per 8-element `vpgatherdq`. Intel's cores gather faster
/// and keep the gathers: on an Intel Xeon guest with AMX (family 6 model 167, 2 vCPUs; the
/// same shape, the two forms alternated process by process) the gathers took 0.80–0.82 of the
/// scalar loads' time dense fwd+bwd at 1 and 2 threads, 0.85–0.87 forward, 0.67–0.78 class
/// labels. Both load the same entries and add them in the same order: the same bits.
fn scalar_lookups() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        crate::env::switch(
            "PROFILEDNN_FOCAL_LOOKUP",
            "scalar",
            "gather",
            profilednn_isa::amd,
        )
    })
}

/// e^x for x ≤ 0: Cephes' degree-6 polynomial folded into one Horner chain with the constant
/// and linear terms; 2ⁿ applied by `vscalefps`.
#[inline(always)]
unsafe fn exp_nonpos(x: __m512) -> __m512 {
    let x = _mm512_max_ps(x, _mm512_set1_ps(-87.336_55));
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(
        _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)),
    );
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693_359_4), x);
    let r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.121_944_4e-4), r);
    let mut p = _mm512_set1_ps(1.987_569_1e-4);
    for c in [
        1.398_2e-3,
        8.333_452e-3,
        4.166_579_6e-2,
        1.666_666_5e-1,
        0.5,
        1.0,
        1.0,
    ] {
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
    }
    _mm512_scalef_ps(p, n)
}

/// ln(1 + e) for e ∈ [0, 1]: the same degree-9 fit as `vmath::ln_1p_small`.
#[inline(always)]
unsafe fn ln_1p_small(e: __m512) -> __m512 {
    let mut p = _mm512_set1_ps(-0.003_214_036_3);
    for c in [
        0.019_649_167,
        -0.056_435_03,
        0.105_332_29,
        -0.152_514_52,
        0.196_514_92,
        -0.249_478_09,
        0.333_291,
        -0.499_998_5,
        1.0,
    ] {
        p = _mm512_fmadd_ps(p, e, _mm512_set1_ps(c));
    }
    _mm512_mul_ps(e, p)
}

/// What every target needs: e = e^−|x|, 1/(1 + e), e/(1 + e), x ≥ 0, ln(1 + e).
#[inline(always)]
unsafe fn sigmoid_parts(x: __m512, k: &K) -> (__m512, __m512, __mmask16, __m512) {
    // −|x| by setting the sign bit.
    let nx = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(x),
        _mm512_set1_epi32(i32::MIN),
    ));
    let e = exp_nonpos(nx);
    let d = _mm512_add_ps(k.one, e);
    let r0 = _mm512_rcp14_ps(d);
    let inv = _mm512_fmadd_ps(_mm512_fnmadd_ps(d, r0, k.one), r0, r0);
    let einv = _mm512_mul_ps(e, inv);
    let pos = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, k.zero);
    (inv, einv, pos, ln_1p_small(e))
}

/// (loss, gradient) of 16 elements with any targets; see `elem::focal` for the formulas.
#[inline(always)]
unsafe fn focal16<const G: u8>(x: __m512, t: __m512, k: &K) -> (__m512, __m512) {
    let (inv, einv, pos, l1p) = sigmoid_parts(x, k);
    let p = _mm512_mask_blend_ps(pos, einv, inv);
    let q = _mm512_mask_blend_ps(pos, inv, einv);
    // ce = (max(x, 0) − x·t) + ln(1 + e), in that order: the bracket is exactly 0 for a
    // confident correct logit (x > 0, t = 1), where ln(1 + e) is all of ce.
    let ce = _mm512_add_ps(_mm512_fnmadd_ps(x, t, _mm512_max_ps(x, k.zero)), l1p);
    // m = p·(1 − t) + q·t and p − t = p·(1 − t) − q·t, from p − p·t (exact at t ∈ {0, 1}):
    // no cancellation when p is near 1 and q tiny (p + t·(q − p) would lose q entirely).
    let pnt = _mm512_fnmadd_ps(p, t, p);
    let m = _mm512_fmadd_ps(q, t, pnt);
    let p_minus_t = _mm512_fnmadd_ps(q, t, pnt);
    let (w, dw) = match G {
        GAMMA_0 => (k.one, k.zero),
        GAMMA_1 => (m, k.one),
        _ => (_mm512_mul_ps(m, m), _mm512_add_ps(m, m)),
    };
    // dm/dx = p·q·(1 − 2t)
    let dm = _mm512_mul_ps(_mm512_mul_ps(p, q), _mm512_fnmadd_ps(k.two, t, k.one));
    let at = _mm512_fmadd_ps(t, k.a1, k.a0);
    let loss = _mm512_mul_ps(_mm512_mul_ps(at, ce), w);
    let inner = _mm512_fmadd_ps(p_minus_t, w, _mm512_mul_ps(_mm512_mul_ps(ce, dw), dm));
    let ats = _mm512_fmadd_ps(t, k.at1, k.at0);
    (loss, _mm512_mul_ps(ats, inner))
}

/// The same for 16 elements whose targets are all 0 (most of a one-hot or class-index target),
/// returning the loss *without* its weight 1 − α (the caller applies it once per run):
/// ce = max(x, 0) + ln(1 + e), m = p, and for γ = 2 the gradient
/// (1 − α)·(p³ + 2·ce·p²·q) = (1 − α)·p²·(p + 2·ce·q). On CPUs whose 512-bit multiplies are
/// the bottleneck (this loop is bound by its multiply/FMA count), the factored form saves
/// three multiplies per vector.
#[inline(always)]
unsafe fn focal16_t0<const G: u8>(x: __m512, k: &K) -> (__m512, __m512) {
    let (inv, einv, pos, l1p) = sigmoid_parts(x, k);
    let p = _mm512_mask_blend_ps(pos, einv, inv);
    let ce = _mm512_add_ps(_mm512_max_ps(x, k.zero), l1p);
    match G {
        GAMMA_0 => (ce, _mm512_mul_ps(k.at0, p)),
        GAMMA_1 => {
            // p² + ce·p·q
            let pq = _mm512_mul_ps(einv, inv);
            let inner = _mm512_fmadd_ps(ce, pq, _mm512_mul_ps(p, p));
            (_mm512_mul_ps(ce, p), _mm512_mul_ps(k.at0, inner))
        }
        _ => {
            let q = _mm512_mask_blend_ps(pos, inv, einv);
            let w = _mm512_mul_ps(p, p);
            let inner = _mm512_fmadd_ps(_mm512_add_ps(ce, ce), q, p);
            (
                _mm512_mul_ps(ce, w),
                _mm512_mul_ps(k.at0, _mm512_mul_ps(w, inner)),
            )
        }
    }
}

/// `focal16_t0` for bf16 logits, looked up: a bf16 logit is one of 65 536 bit patterns, so the
/// unweighted loss and gradient of an all-zero target are a function of those 16 bits, tabulated
/// once per γ (`table::t0_table`). Gathers from an interleaved table (both values of a logit in one
/// 64-bit entry; the logits of a real head take a few thousand distinct values, so the part
/// that is used stays in L1) replace the ~40 multiplies and FMAs of exp, the reciprocal and
/// ln(1 + e) that bound this loop at one thread.
#[inline(always)]
unsafe fn focal16_t0_table(x: __m512, k: &K) -> (__m512, __m512) {
    let idx = _mm512_srli_epi32::<16>(_mm512_castps_si512(x));
    // One 64-bit gather per 8 elements fetches both values of an element: 16 loads per 16
    // elements where two 32-bit gathers took 32 (the load ports bound this loop now).
    let tab = k.tab as *const i64;
    let a = _mm512_i32gather_epi64::<8>(_mm512_castsi512_si256(idx), tab);
    let b = _mm512_i32gather_epi64::<8>(_mm512_extracti64x4_epi64::<1>(idx), tab);
    let (a, b) = (_mm512_castsi512_ps(a), _mm512_castsi512_ps(b));
    let even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    let l = _mm512_permutex2var_ps(a, even, b);
    let d = _mm512_permutex2var_ps(a, odd, b);
    (l, _mm512_mul_ps(k.at0, d))
}

/// A 64-byte line of 32 bf16 logits whose targets are all zero, looked up (`table::t0_table`):
/// the unweighted losses added into `pairs` as the table holds them — (loss, gradient) in
/// each pair of lanes, so that no permute separates them (the even lanes are the losses;
/// [`run_elems`] adds them at the end) — and the two chunks' gradients × α_t·scale returned.
/// `scalar`: 32 scalar 64-bit loads assembled into four vectors instead of four gathers.
#[inline(always)]
unsafe fn line32_t0_table(x: *const u16, k: &K, pairs: &mut __m512) -> (__m512, __m512) {
    let tab = k.tab as *const i64;
    let entries = |o: usize| -> __m512 {
        if k.scalar {
            // The table's entries are pairs of f32: 4-byte aligned as far as Rust knows.
            let e = |j: usize| tab.add(*x.add(o + j) as usize).read_unaligned();
            _mm512_castsi512_ps(_mm512_set_epi64(
                e(7),
                e(6),
                e(5),
                e(4),
                e(3),
                e(2),
                e(1),
                e(0),
            ))
        } else {
            let idx = _mm256_cvtepu16_epi32(_mm_loadu_si128(x.add(o) as *const __m128i));
            _mm512_castsi512_ps(_mm512_i32gather_epi64::<8>(idx, tab))
        }
    };
    let (a, b, c, d) = (entries(0), entries(8), entries(16), entries(24));
    *pairs = _mm512_add_ps(
        *pairs,
        _mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)),
    );
    let odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    (
        _mm512_mul_ps(k.at0, _mm512_permutex2var_ps(a, odd, b)),
        _mm512_mul_ps(k.at0, _mm512_permutex2var_ps(c, odd, d)),
    )
}

/// One chunk into the accumulators: `acc` for weighted losses, `acc0` for the all-zero-target
/// form (weighted by 1 − α once, at the end of the run).
#[inline(always)]
unsafe fn chunk16<const G: u8, X: Elem>(
    x: __m512,
    t: __m512,
    m: __mmask16,
    k: &K,
    acc: &mut __m512,
    acc0: &mut __m512,
) -> __m512 {
    if _mm512_cmpneq_ps_mask(t, k.zero) == 0 {
        let (l, d) = if X::TABLE {
            focal16_t0_table(x, k)
        } else {
            focal16_t0::<G>(x, k)
        };
        *acc0 = _mm512_mask_add_ps(*acc0, m, *acc0, l);
        d
    } else {
        let (l, d) = focal16::<G>(x, t, k);
        *acc = _mm512_mask_add_ps(*acc, m, *acc, l);
        d
    }
}

/// Lanes of `acc` added in lane order, in f64 (what the portable loop does).
#[inline(always)]
unsafe fn lanes(acc: __m512) -> f64 {
    let mut a = [0f32; W];
    _mm512_storeu_ps(a.as_mut_ptr(), acc);
    a.iter().map(|v| *v as f64).sum()
}

/// An element type the loop reads (logits, dense targets) and writes (the gradient).
pub trait Elem: Copy {
    /// Loads up to 16 elements (lanes outside `m` are 0).
    unsafe fn load(p: *const Self, m: __mmask16) -> __m512;
    /// Stores the lanes of `m`; `aligned` full chunks may bypass the caches (`stream`).
    unsafe fn store(p: *mut Self, m: __mmask16, v: __m512, full_aligned: bool, stream: bool);
    /// Whether the 32 elements at `p` are all +0.0 bits (dense targets: the two chunks of a
    /// paired step then take the all-zero-target form without loading them as f32). A −0.0
    /// or NaN target is not zero bits: its line takes the general form, as before.
    unsafe fn zero32(p: *const Self) -> bool;
    /// Whether the loop stores 32 elements at a time (a whole 64-byte line: bf16).
    const PAIRED: bool;
    /// Whether all-zero-target chunks are looked up in `table::t0_table` (bf16 logits).
    const TABLE: bool;
    /// Stores `lo` then `hi` (32 elements) at a 64-byte-aligned `p`; `HW`: convert with
    /// AVX512-BF16's `vcvtne2ps2bf16` (only called from code compiled with that feature).
    unsafe fn store2<const HW: bool>(p: *mut Self, lo: __m512, hi: __m512, stream: bool);
}

impl Elem for f32 {
    #[inline(always)]
    unsafe fn load(p: *const f32, m: __mmask16) -> __m512 {
        if m == 0xffff {
            _mm512_loadu_ps(p)
        } else {
            _mm512_maskz_loadu_ps(m, p)
        }
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, m: __mmask16, v: __m512, full_aligned: bool, stream: bool) {
        if full_aligned && stream {
            _mm512_stream_ps(p, v);
        } else if full_aligned {
            _mm512_store_ps(p, v);
        } else {
            _mm512_mask_storeu_ps(p, m, v);
        }
    }
    #[inline(always)]
    unsafe fn zero32(p: *const f32) -> bool {
        let v = _mm512_or_si512(
            _mm512_loadu_si512(p as *const __m512i),
            _mm512_loadu_si512(p.add(W) as *const __m512i),
        );
        _mm512_test_epi32_mask(v, v) == 0
    }
    const PAIRED: bool = false;
    const TABLE: bool = false;
    #[inline(always)]
    unsafe fn store2<const HW: bool>(p: *mut f32, lo: __m512, hi: __m512, stream: bool) {
        f32::store(p, 0xffff, lo, true, stream);
        f32::store(p.add(W), 0xffff, hi, true, stream);
    }
}

/// f32 → bf16 bits in the low half of each 32-bit lane, round to nearest even, NaN kept a
/// quiet NaN (the sign and top mantissa bits kept, the quiet bit set), as `crate::bf16`.
/// Integer AVX-512 only: for CPUs without AVX512-BF16.
#[inline(always)]
unsafe fn bf16_rne(v: __m512) -> __m512i {
    let bits = _mm512_castps_si512(v);
    let top = _mm512_srli_epi32::<16>(bits);
    let odd = _mm512_and_si512(top, _mm512_set1_epi32(1));
    let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(
        _mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)),
        odd,
    ));
    // NaN: the rounding carry could turn it into an infinity; keep its top bits, quieted.
    let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    _mm512_mask_or_epi32(rounded, nan, top, _mm512_set1_epi32(0x40))
}

/// 32 f32 → 32 bf16 in order (`lo` first), by integer round-to-nearest-even and one permute
/// that takes the low 16 bits of every 32-bit lane of both registers.
#[inline(always)]
unsafe fn bf16_rne_x32(lo: __m512, hi: __m512) -> __m512i {
    let idx = _mm512_set_epi16(
        62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26, 24, 22, 20, 18,
        16, 14, 12, 10, 8, 6, 4, 2, 0,
    );
    _mm512_permutex2var_epi16(bf16_rne(lo), idx, bf16_rne(hi))
}

/// The same with AVX512-BF16's `vcvtne2ps2bf16`: one instruction for 32 elements. It rounds
/// to nearest even and quiets NaNs like the integer path, but flushes denormal inputs and
/// outputs to (signed) zero (Intel SDM, VCVTNE2PS2BF16): values below 2^-126, far under any
/// gradient that matters.
#[inline(always)]
unsafe fn bf16_hw_x32(lo: __m512, hi: __m512) -> __m512i {
    // SAFETY (caller): compiled into a function with `avx512bf16` enabled, run only where the
    // CPU has it (`profilednn_isa::avx512_bf16`).
    std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo))
}

/// bf16 as `u16` bits: widened by a shift, narrowed with round-to-nearest-even (NaN stays a
/// quiet NaN), like `crate::bf16`.
impl Elem for u16 {
    #[inline(always)]
    unsafe fn load(p: *const u16, m: __mmask16) -> __m512 {
        let h = _mm256_maskz_loadu_epi16(m, p as *const i16);
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
    }
    /// Heads and tails only (the loop stores whole lines with `store2`): a masked store.
    #[inline(always)]
    unsafe fn store(p: *mut u16, m: __mmask16, v: __m512, _full_aligned: bool, _stream: bool) {
        let h = _mm512_cvtepi32_epi16(bf16_rne(v));
        _mm256_mask_storeu_epi16(p as *mut i16, m, h);
    }
    #[inline(always)]
    unsafe fn zero32(p: *const u16) -> bool {
        let v = _mm512_loadu_si512(p as *const __m512i);
        _mm512_test_epi16_mask(v, v) == 0
    }
    const PAIRED: bool = true;
    const TABLE: bool = true;
    /// One 64-byte store per line: a 32-byte non-temporal store fills only half a
    /// write-combining buffer, and the earlier per-16 conversion (`vpmovdw`, 2 uops) cost more
    /// than the permute that packs 32 here.
    #[inline(always)]
    unsafe fn store2<const HW: bool>(p: *mut u16, lo: __m512, hi: __m512, stream: bool) {
        let h = if HW {
            bf16_hw_x32(lo, hi)
        } else {
            bf16_rne_x32(lo, hi)
        };
        if stream {
            _mm512_stream_si512(p as *mut __m512i, h);
        } else {
            _mm512_store_si512(p as *mut __m512i, h);
        }
    }
}

/// Elements before `ptr` reaches a 64-byte (cache-line) boundary (at most `n`).
fn head_len<T>(ptr: *const T, n: usize) -> usize {
    let size = std::mem::size_of::<T>();
    let align = 64;
    (((align - (ptr as usize) % align) % align) / size).min(n)
}

fn mask(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// One run of elements `[0, n)` at `x` (and `g` when `GRAD`): a masked head up to the
/// alignment of the output, full chunks, a masked tail. t comes from `target(i0, mask)` for the
/// chunk of `mask.count_ones()` elements starting at element i0, called in increasing i0.
/// Returns the lane accumulator (losses already weighted).
// The closures are its per-caller parts (targets, zero lines, prefetch): one loop for both.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn run_elems<const G: u8, const GRAD: bool, const HW: bool, X: Elem>(
    x: *const X,
    g: *mut X,
    n: usize,
    k: &K,
    stream: bool,
    mut target: impl FnMut(usize, __mmask16) -> __m512,
    zero32: impl Fn(usize) -> bool,
    pre: impl Fn(usize),
) -> __m512 {
    // Only bf16 (`u16`, looked up) is stored by lines: the paired loop looks every line up.
    const { assert!(!X::PAIRED || X::TABLE, "a paired element type is looked up") };
    let (mut acc, mut acc0) = (k.zero, k.zero);
    // Looked-up lines' (loss, gradient) pairs (`line32_t0_table`).
    let mut pairs = k.zero;
    let h = if GRAD { head_len(g, n) } else { head_len(x, n) };
    // A macro, not a closure: the body must be compiled inside this function's target features.
    macro_rules! one {
        ($i:expr, $m:expr, $full:expr) => {{
            let (i, m) = ($i, $m);
            let d = chunk16::<G, X>(
                X::load(x.add(i), m),
                target(i, m),
                m,
                k,
                &mut acc,
                &mut acc0,
            );
            if GRAD {
                X::store(g.add(i), m, d, $full, stream);
            }
        }};
    }
    // The head: up to a line of elements, in chunks of at most 16.
    let mut i = 0;
    while i < h {
        let k = W.min(h - i);
        one!(i, mask(k), false);
        i += k;
    }
    if X::PAIRED {
        // Two chunks (a 64-byte line of bf16 gradient) per step. Where all 32 targets are zero
        // (`zero32`, nearly every line of a detection head's loss), the line is looked up whole
        // (`line32_t0_table`) without its targets being loaded and compared as f32; its losses
        // go to their own accumulator, in the same lanes whichever way it was looked up.
        while i + 2 * W <= n {
            _mm_prefetch::<_MM_HINT_T0>(x.wrapping_add(i + PREFETCH_AHEAD) as *const i8);
            let (lo, hi) = if zero32(i) {
                // TABLE: bf16 logits, `X` is `u16`.
                line32_t0_table(x.add(i) as *const u16, k, &mut pairs)
            } else {
                (
                    chunk16::<G, X>(
                        X::load(x.add(i), 0xffff),
                        target(i, 0xffff),
                        0xffff,
                        k,
                        &mut acc,
                        &mut acc0,
                    ),
                    chunk16::<G, X>(
                        X::load(x.add(i + W), 0xffff),
                        target(i + W, 0xffff),
                        0xffff,
                        k,
                        &mut acc,
                        &mut acc0,
                    ),
                )
            };
            if GRAD {
                X::store2::<HW>(g.add(i), lo, hi, stream);
            }
            i += 2 * W;
        }
    }
    if !X::PAIRED && k.prefetch_f32 {
        let ahead = F32_PREFETCH_BYTES / std::mem::size_of::<X>();
        while i + W <= n {
            _mm_prefetch::<_MM_HINT_T0>(x.wrapping_add(i + ahead) as *const i8);
            pre(i + ahead);
            one!(i, 0xffff, true);
            i += W;
        }
    }
    while i + W <= n {
        one!(i, 0xffff, true);
        i += W;
    }
    if i < n {
        one!(i, mask(n - i), false);
    }
    // The looked-up losses: the even lanes of the pairs.
    let acc0 = _mm512_add_ps(acc0, _mm512_maskz_mov_ps(0x5555, pairs));
    _mm512_fmadd_ps(acc0, k.a0, acc)
}

/// Dense targets: partial sums per `block` elements.
#[inline(always)]
unsafe fn dense_body<const G: u8, const GRAD: bool, const HW: bool, X: Elem, T: Elem>(
    x: &[X],
    t: &[T],
    g: *mut X,
    k: K,
    block: usize,
) -> Vec<f64> {
    let stream = GRAD && std::mem::size_of_val(x) >= STREAM_BYTES;
    let mut sums = Vec::with_capacity(x.len().div_ceil(block));
    let mut b = 0;
    while b < x.len() {
        let n = block.min(x.len() - b);
        let tp = t.as_ptr().add(b);
        let gb = if GRAD { g.add(b) } else { g };
        let acc = run_elems::<G, GRAD, HW, X>(
            x.as_ptr().add(b),
            gb,
            n,
            &k,
            stream,
            |i, m| T::load(tp.add(i), m),
            |i| {
                if k.prefetch_targets && std::mem::size_of::<T>() == 2 {
                    // A hint only (no fault past the end); one per line of 32 logits and targets.
                    let ahead = tp.wrapping_add(i + TARGET_PREFETCH_AHEAD);
                    _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
                }
                T::zero32(tp.add(i))
            },
            |i| _mm_prefetch::<_MM_HINT_T0>(tp.wrapping_add(i) as *const i8),
        );
        sums.push(lanes(acc));
        b += n;
    }
    if stream {
        _mm_sfence();
    }
    sums
}

/// Rows per partial sum with class-index targets (callers split threads on multiples of it).
pub const ROW_GROUP: usize = 64;

/// Class-index targets: one partial sum per `ROW_GROUP` rows. Consecutive rows that are not
/// ignored are one flat run of elements (no per-row head, tail or horizontal sum: rows of 91 or
/// 264 classes are only a few vectors long); the lane whose class is the row's label gets
/// t = 1. Ignored rows get a zero gradient and no loss.
#[inline(always)]
unsafe fn classes_body<const G: u8, const GRAD: bool, const HW: bool, X: Elem>(
    x: &[X],
    labels: &[i64],
    classes: usize,
    ignore_index: i64,
    g: *mut X,
    k: K,
) -> Vec<f64> {
    let stream = GRAD && std::mem::size_of_val(x) >= STREAM_BYTES;
    let c = classes;
    let mut sums = Vec::with_capacity(labels.len().div_ceil(ROW_GROUP));
    for (gi, group) in labels.chunks(ROW_GROUP).enumerate() {
        let row0 = gi * ROW_GROUP;
        let mut acc = k.zero;
        let mut r = 0;
        while r < group.len() {
            if group[r] == ignore_index {
                if GRAD {
                    // Zero bits are 0.0 in f32 and in bf16.
                    std::ptr::write_bytes(g.add((row0 + r) * c), 0, c);
                }
                r += 1;
                continue;
            }
            let end = group[r..]
                .iter()
                .position(|l| *l == ignore_index)
                .map_or(group.len(), |e| r + e);
            let run = &group[r..end];
            // Element positions (relative to the run) of the labels, in increasing order;
            // labels outside 0..classes mark no element (background everywhere).
            let mut pos = run
                .iter()
                .enumerate()
                .filter_map(|(j, &l)| (0..c as i64).contains(&l).then_some(j * c + l as usize));
            // The next label's position, shared with `zero32` (which only reads it).
            let next = std::cell::Cell::new(pos.next().unwrap_or(usize::MAX));
            let base = (row0 + r) * c;
            let gb = if GRAD { g.add(base) } else { g };
            let a = run_elems::<G, GRAD, HW, X>(
                x.as_ptr().add(base),
                gb,
                run.len() * c,
                &k,
                stream,
                |i, m| {
                    let end = i + m.count_ones() as usize;
                    let mut bits = 0u16;
                    while next.get() < end {
                        bits |= 1 << (next.get() - i);
                        next.set(pos.next().unwrap_or(usize::MAX));
                    }
                    _mm512_maskz_mov_ps(bits, k.one)
                },
                |i| next.get() >= i + 2 * W,
                |_| {},
            );
            acc = _mm512_add_ps(acc, a);
            r = end;
        }
        sums.push(lanes(acc));
    }
    if stream {
        _mm_sfence();
    }
    sums
}

/// The entry points: the bodies compiled for the AVX-512 level, and again with AVX512-BF16
/// for the bf16 gradient's conversion (`HW`).
macro_rules! entry_points {
    ($dense:ident, $classes:ident, $hw:literal, $features:literal) => {
        #[target_feature(enable = $features)]
        #[allow(clippy::type_complexity)]
        unsafe fn $dense<const G: u8, const GRAD: bool, X: Elem, T: Elem>(
            (x, t, g, k, block): (&[X], &[T], *mut X, K, usize),
        ) -> Vec<f64> {
            dense_body::<G, GRAD, $hw, X, T>(x, t, g, k, block)
        }

        #[target_feature(enable = $features)]
        unsafe fn $classes<const G: u8, const GRAD: bool, X: Elem>(
            x: &[X],
            labels: &[i64],
            c: usize,
            ignore_index: i64,
            g: *mut X,
            k: K,
        ) -> Vec<f64> {
            classes_body::<G, GRAD, $hw, X>(x, labels, c, ignore_index, g, k)
        }
    };
}
entry_points!(dense, classes, false, "avx512f,avx512bw,avx512vl");
entry_points!(
    dense_hw,
    classes_hw,
    true,
    "avx512f,avx512bw,avx512vl,avx512bf16"
);

/// The proof that the loop may run: the AVX-512 level (avx512f/bw/vl/dq detected), and
/// whether AVX512-BF16 was detected too (`true` only then).
#[derive(Clone, Copy)]
pub struct Avx512 {
    bf16_hw: bool,
}

/// Whether this ISA and these parameters take the hand-written loop: `Some` proof when the
/// ISA is the AVX-512 level (which the caller can only hold if the CPU has it). The bf16
/// instructions are used when the CPU has them and `PROFILEDNN_ISA` does not cap the level
/// below AVX-512; `PROFILEDNN_BF16=int` forces the integer rounding (to compare both paths).
pub fn applies(isa: crate::Isa, gamma_mode: u8) -> Option<Avx512> {
    static INT_ONLY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let int_only = *INT_ONLY.get_or_init(crate::env::bf16_integer_rounding);
    (isa.level() == crate::Level::Avx512 && gamma_mode <= GAMMA_2).then(|| Avx512 {
        bf16_hw: !int_only && profilednn_isa::avx512_bf16(),
    })
}

/// How the AVX-512 loop looks up lines of all-zero targets on this CPU (for benchmark output).
pub fn lookup_form() -> &'static str {
    if scalar_lookups() {
        "scalar loads"
    } else {
        "gathers"
    }
}

/// Whether the bf16 loop prefetches dense targets on this CPU (for benchmark output).
pub fn target_prefetch_form() -> &'static str {
    if target_prefetch() {
        "bf16 dense targets prefetched 4 KB ahead"
    } else {
        "bf16 dense targets not prefetched"
    }
}

/// Whether the f32 loop prefetches on this CPU (for benchmark output).
pub fn f32_prefetch_form() -> &'static str {
    if f32_prefetch() {
        "logits and dense targets prefetched 4 KB ahead"
    } else {
        "no software prefetch"
    }
}

/// How the AVX-512 loop converts a bf16 gradient on this CPU (for benchmark output).
pub fn bf16_rounding(proof: Avx512) -> &'static str {
    if proof.bf16_hw {
        "vcvtne2ps2bf16 (AVX512-BF16)"
    } else {
        "integer round-to-nearest-even (no AVX512-BF16)"
    }
}

/// The reduced pass over `x`: returns the partial sums, and writes the gradient × `scale`
/// into `grad` when given (same type as `x`). `None` when the combination of types is not
/// one this loop handles. Callers check `applies` first.
#[allow(clippy::too_many_arguments)]
pub fn fused(
    proof: Avx512,
    gamma_mode: u8,
    x: Tensor,
    targets: Targets,
    alpha: f32,
    weighted: bool,
    scale: f32,
    grad: Option<&mut TensorMut>,
    block: usize,
) -> Option<Vec<f64>> {
    assert!(gamma_mode <= GAMMA_2);
    let bf16_hw = proof.bf16_hw;
    // α_t = α·t + (1 − α)·(1 − t) = (1 − α) + t·(2α − 1); without weighting, 1.
    let (a0, a1) = if weighted {
        (1.0 - alpha, 2.0 * alpha - 1.0)
    } else {
        (1.0, 0.0)
    };
    if let Targets::Dense(t) = targets {
        assert_eq!(t.len(), x.len());
    }
    if let Targets::Classes {
        labels, classes, ..
    } = targets
    {
        assert_eq!(labels.len() * classes, x.len());
    }
    // SAFETY: `proof` exists only for an `Isa` of the AVX-512 level, made by detection of
    // avx512f/bw/vl/dq (the features these functions are compiled for), and its `bf16_hw` is
    // true only where avx512bf16 was detected too (the `_hw` entry points); every pointer stays
    // inside slices whose lengths are checked here (targets) or below (gradient).
    unsafe {
        let k = K {
            zero: _mm512_setzero_ps(),
            one: _mm512_set1_ps(1.0),
            two: _mm512_set1_ps(2.0),
            at0: _mm512_set1_ps(a0 * scale),
            at1: _mm512_set1_ps(a1 * scale),
            a0: _mm512_set1_ps(a0),
            a1: _mm512_set1_ps(a1),
            tab: match x {
                Tensor::Bf16(_) => super::table::t0_table(gamma_mode)
                    .expect("the AVX-512 loop takes only γ ∈ {0, 1, 2}")
                    .as_ptr() as *const f32,
                Tensor::F32(_) => std::ptr::null(),
            },
            scalar: scalar_lookups(),
            prefetch_targets: target_prefetch(),
            prefetch_f32: f32_prefetch(),
        };
        macro_rules! by_gamma {
            ($f:ident, $grad:expr, $($arg:expr),*) => {
                match gamma_mode {
                    GAMMA_0 => $f::<GAMMA_0, $grad, _>($($arg),*),
                    GAMMA_1 => $f::<GAMMA_1, $grad, _>($($arg),*),
                    _ => $f::<GAMMA_2, $grad, _>($($arg),*),
                }
            };
        }
        macro_rules! by_targets {
            ($dense:ident, $classes:ident, $grad:expr, $x:expr, $g:expr) => {
                match targets {
                    Targets::Dense(Tensor::F32(t)) => match gamma_mode {
                        GAMMA_0 => $dense::<GAMMA_0, $grad, _, f32>(($x, t, $g, k, block)),
                        GAMMA_1 => $dense::<GAMMA_1, $grad, _, f32>(($x, t, $g, k, block)),
                        _ => $dense::<GAMMA_2, $grad, _, f32>(($x, t, $g, k, block)),
                    },
                    Targets::Dense(Tensor::Bf16(t)) => match gamma_mode {
                        GAMMA_0 => $dense::<GAMMA_0, $grad, _, u16>(($x, t, $g, k, block)),
                        GAMMA_1 => $dense::<GAMMA_1, $grad, _, u16>(($x, t, $g, k, block)),
                        _ => $dense::<GAMMA_2, $grad, _, u16>(($x, t, $g, k, block)),
                    },
                    Targets::Classes {
                        labels,
                        classes: c,
                        ignore_index,
                    } => by_gamma!($classes, $grad, $x, labels, c, ignore_index, $g, k),
                }
            };
        }
        Some(match (x, grad) {
            (Tensor::F32(x), Some(TensorMut::F32(g))) => {
                assert_eq!(g.len(), x.len());
                by_targets!(dense, classes, true, x, g.as_mut_ptr())
            }
            (Tensor::Bf16(x), Some(TensorMut::Bf16(g))) => {
                assert_eq!(g.len(), x.len());
                // The bf16 gradient is rounded by `vcvtne2ps2bf16` where the CPU has it.
                if bf16_hw {
                    by_targets!(dense_hw, classes_hw, true, x, g.as_mut_ptr())
                } else {
                    by_targets!(dense, classes, true, x, g.as_mut_ptr())
                }
            }
            (Tensor::F32(x), None) => {
                by_targets!(dense, classes, false, x, std::ptr::null_mut::<f32>())
            }
            (Tensor::Bf16(x), None) => {
                by_targets!(dense, classes, false, x, std::ptr::null_mut::<u16>())
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` logits scattered over [−128, 128) (a multiplicative hash of the index).
    fn spread_logits(n: usize) -> impl Iterator<Item = f32> {
        (0..n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) >> 8) as f32 / 65_536.0) - 128.0)
    }

    /// A `K` for tests: (at0, at1) and (a0, a1) as in `fused`, the rest as given.
    unsafe fn test_k(
        at: (f32, f32),
        a: (f32, f32),
        tab: *const f32,
        scalar: bool,
        prefetch_targets: bool,
        prefetch_f32: bool,
    ) -> K {
        // SAFETY: the caller detected the AVX-512 level.
        unsafe {
            K {
                zero: _mm512_setzero_ps(),
                one: _mm512_set1_ps(1.0),
                two: _mm512_set1_ps(2.0),
                at0: _mm512_set1_ps(at.0),
                at1: _mm512_set1_ps(at.1),
                a0: _mm512_set1_ps(a.0),
                a1: _mm512_set1_ps(a.1),
                tab,
                scalar,
                prefetch_targets,
                prefetch_f32,
            }
        }
    }

    /// Every input class of the f32 → bf16 conversion: zeros, ±1, exact ties (round to even
    /// both ways), just above/below ties, the largest finite values (rounding up to ∞), ∞,
    /// quiet and signalling NaNs of both signs, denormals (incl. ties), and a sweep of bit
    /// patterns.
    fn inputs() -> Vec<u32> {
        let mut v = vec![
            0x0000_0000,
            0x8000_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x3f80_8000, // 1 + 2^-8: tie, even (down) → 0x3f80
            0x3f81_8000, // tie, odd → up to 0x3f82
            0x3f80_8001,
            0x3f80_7fff,
            0xbf81_8000,
            0x7f7f_ffff,
            0xff7f_ffff, // max finite: rounds up to ±∞
            0x7f7f_7fff, // max finite that stays finite
            0x7f80_0000,
            0xff80_0000, // ±∞
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0xff80_0001,
            0x7fff_ffff,
            0x7f80_8000,
            0x0000_0001,
            0x8000_0001,
            0x0000_8000,
            0x0001_8000,
            0x007f_ffff,
            0x0080_0000,
        ];
        let mut x = 0x1234_5678u32;
        while v.len() % 32 != 0 || v.len() < 32 * 64 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v.push(x);
        }
        v
    }

    /// The rounding written from its definition (independent of `crate::bf16`): the nearest
    /// bf16 value, ties to the even mantissa, computed on the integer value of the bits; NaN:
    /// the top 16 bits with the quiet bit set.
    fn reference(bits: u32) -> u16 {
        let f = f32::from_bits(bits);
        if f.is_nan() {
            return ((bits >> 16) | 0x40) as u16;
        }
        let (hi, lo) = (bits >> 16, bits & 0xffff);
        let up = lo > 0x8000 || (lo == 0x8000 && hi & 1 == 1);
        (if up { hi + 1 } else { hi }) as u16
    }

    /// What `vcvtne2ps2bf16` does (Intel SDM): the same, except denormal inputs give a zero of
    /// their sign.
    fn reference_hw(bits: u32) -> u16 {
        let exp = (bits >> 23) & 0xff;
        if exp == 0 {
            return (bits >> 16) as u16 & 0x8000;
        }
        reference(bits)
    }

    /// Converts `v` (f32 bits) 32 at a time with `x32`.
    #[inline(always)]
    unsafe fn convert(v: &[u32], x32: impl Fn(__m512, __m512) -> __m512i) -> Vec<u16> {
        let mut out = vec![0u16; v.len()];
        for (src, dst) in v.chunks_exact(32).zip(out.chunks_exact_mut(32)) {
            let lo = _mm512_loadu_ps(src.as_ptr() as *const f32);
            let hi = _mm512_loadu_ps(src.as_ptr().add(16) as *const f32);
            _mm512_storeu_si512(dst.as_mut_ptr() as *mut __m512i, x32(lo, hi));
        }
        out
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn convert_int(v: &[u32]) -> Vec<u16> {
        let out = convert(v, |lo, hi| {
            // SAFETY: the caller detected the AVX-512 level (closures inherit the features).
            unsafe { bf16_rne_x32(lo, hi) }
        });
        // The single-register store of heads and tails gives the same bits.
        for (src, dst) in v.chunks_exact(16).zip(out.chunks_exact(16)) {
            let mut one = [0u16; 16];
            u16::store(
                one.as_mut_ptr(),
                0xffff,
                _mm512_loadu_ps(src.as_ptr() as *const f32),
                false,
                false,
            );
            assert_eq!(one[..], dst[..]);
        }
        out
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn convert_hw(v: &[u32]) -> Vec<u16> {
        convert(v, |lo, hi| {
            // SAFETY: the caller checked avx512bf16 (and the AVX-512 level).
            unsafe { bf16_hw_x32(lo, hi) }
        })
    }

    fn check(got: &[u16], v: &[u32], want: fn(u32) -> u16, what: &str) {
        for (i, (&b, &g)) in v.iter().zip(got).enumerate() {
            assert_eq!(g, want(b), "{what}: element {i}, input bits {b:#010x}");
        }
    }

    /// Both lookups of a line, on every bf16 bit pattern (in a scrambled order, so each line
    /// holds unrelated entries): the (loss, gradient) pairs summed and the gradients returned.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn both_lookups(logits: &[u16], tab: *const f32) -> [Vec<u32>; 2] {
        let mut out = [Vec::new(), Vec::new()];
        for (form, scalar) in out.iter_mut().zip([false, true]) {
            let k = test_k((0.75 / 3.0, 0.0), (0.75, 0.0), tab, scalar, false, false);
            let mut pairs = k.zero;
            for line in logits.chunks_exact(2 * W) {
                let (lo, hi) = line32_t0_table(line.as_ptr(), &k, &mut pairs);
                for v in [lo, hi, pairs] {
                    let mut a = [0u32; W];
                    _mm512_storeu_si512(a.as_mut_ptr() as *mut __m512i, _mm512_castps_si512(v));
                    form.extend(a);
                }
            }
        }
        out
    }

    /// The scalar loads and the gathers look up the same entries and add them alike (the
    /// choice between them is the CPU vendor's, `scalar_lookups`): the same bits, for every
    /// bf16 logit, against the gradients and losses of the table itself.
    #[test]
    fn scalar_and_gathered_lookups_give_the_same_bits() {
        let Some(_) = crate::Isa::of(crate::Level::Avx512) else {
            eprintln!("SKIPPED: the CPU has no AVX-512 (avx512f/bw/vl/dq)");
            return;
        };
        let table = crate::focal::table::t0_table(GAMMA_2).unwrap();
        // Every pattern once, multiplied by an odd constant modulo 2^16: a permutation.
        let logits: Vec<u16> = (0..=u16::MAX).map(|b| b.wrapping_mul(40_503)).collect();
        // SAFETY: the AVX-512 level was detected just above; every u16 indexes the table.
        let [gathered, scalar] = unsafe { both_lookups(&logits, table.as_ptr() as *const f32) };
        assert_eq!(gathered.len(), 3 * logits.len() / 2);
        assert!(gathered == scalar, "the two lookups differ");
        // The gradients are the table's × α_t·scale, in logit order.
        for (line, out) in logits.chunks_exact(2 * W).zip(scalar.chunks_exact(3 * W)) {
            for (j, &b) in line.iter().enumerate() {
                let want = (0.75f32 / 3.0) * table[b as usize][1];
                assert_eq!(out[j], want.to_bits(), "gradient of logit bits {b:#06x}");
            }
        }
    }

    /// The dense fwd+bwd pass with each lookup form (`K.scalar` set both ways, whatever
    /// `scalar_lookups` chose for this CPU): the same block sums and gradient bits into the same
    /// buffer, on logits with some nonzero targets among the zero ones (lines of both kinds,
    /// heads and tails).
    #[test]
    fn the_pass_gives_the_same_bits_with_either_lookup() {
        let Some(_) = crate::Isa::of(crate::Level::Avx512) else {
            eprintln!("SKIPPED: the CPU has no AVX-512 (avx512f/bw/vl/dq)");
            return;
        };
        let n = 100_003;
        let x: Vec<u16> = spread_logits(n).map(crate::bf16::from_f32).collect();
        let t: Vec<u16> = (0..n)
            .map(|i| {
                if i % 997 == 0 {
                    crate::bf16::from_f32(1.0)
                } else {
                    0
                }
            })
            .collect();
        let table = crate::focal::table::t0_table(GAMMA_2).unwrap();
        // One gradient buffer for both passes: where the lines start depends on its alignment.
        let mut g = vec![0u16; n];
        let mut run = |scalar: bool| {
            g.fill(0);
            // SAFETY: the AVX-512 level was detected above; the slices are of equal length.
            let sums = unsafe {
                let k = test_k(
                    (0.75 / 7.0, -0.5 / 7.0),
                    (0.75, -0.5),
                    table.as_ptr() as *const f32,
                    scalar,
                    scalar,
                    false,
                );
                dense::<GAMMA_2, true, u16, u16>((&x[1..], &t[1..], g.as_mut_ptr().add(1), k, 4096))
            };
            (
                sums.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
                g.clone(),
            )
        };
        let (gathered, scalar) = (run(false), run(true));
        assert!(gathered.1.iter().any(|&v| v != 0), "a gradient was written");
        assert!(gathered == scalar, "the two lookups' passes differ");
    }

    /// The f32 dense fwd+bwd pass with and without its prefetches (`K.prefetch_f32` set both
    /// ways): the prefetching loop is a copy of the chunk loop, so it must cover the same
    /// elements, in the same order, into the same lanes: the same block sums and gradient bits,
    /// and the gradient of the portable formula.
    #[test]
    fn the_f32_pass_gives_the_same_bits_with_and_without_prefetch() {
        let Some(_) = crate::Isa::of(crate::Level::Avx512) else {
            eprintln!("SKIPPED: the CPU has no AVX-512 (avx512f/bw/vl/dq)");
            return;
        };
        let n = 100_003;
        let x: Vec<f32> = spread_logits(n).collect();
        let t: Vec<f32> = (0..n).map(|i| (i % 997 == 0) as u8 as f32).collect();
        let mut g = vec![0f32; n];
        let mut run = |prefetch: bool| {
            g.fill(0.0);
            // SAFETY: the AVX-512 level was detected above; the slices are of equal length.
            let sums = unsafe {
                let k = test_k(
                    (0.75, -0.5),
                    (0.75, -0.5),
                    std::ptr::null(),
                    false,
                    false,
                    prefetch,
                );
                dense::<GAMMA_2, true, f32, f32>((&x[1..], &t[1..], g.as_mut_ptr().add(1), k, 4096))
            };
            (
                sums.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
                g.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            )
        };
        let (plain, prefetched) = (run(false), run(true));
        assert_eq!(g[0], 0.0, "nothing written before the slice");
        // d/dx of α_t·(1 − p_t)²·CE with α = 0.25, by hand in f64 (the module doc's formula).
        let want = |x: f64, t: f64| {
            let p = 1.0 / (1.0 + (-x).exp());
            let ce = x.max(0.0) - x * t + (-x.abs()).exp().ln_1p();
            let m = p * (1.0 - t) + (1.0 - p) * t;
            let at = 0.75 - 0.5 * t;
            at * ((p - t) * m * m + ce * 2.0 * m * (-p * (1.0 - p) * (2.0 * t - 1.0)))
        };
        let mut checked = 0;
        for i in (1..n).step_by(97).chain([n - 1]) {
            let (w, got) = (
                want(x[i] as f64, t[i] as f64),
                f32::from_bits(prefetched.1[i]),
            );
            assert!(
                (got as f64 - w).abs() <= 1e-5 * w.abs().max(1e-3),
                "element {i}: {got} vs {w}"
            );
            checked += 1;
        }
        assert!(checked > 1000);
        assert!(
            plain == prefetched,
            "the passes with and without prefetch differ"
        );
    }

    #[test]
    fn integer_rounding_matches_the_definition_on_every_input_class() {
        let Some(_) = crate::Isa::of(crate::Level::Avx512) else {
            eprintln!("SKIPPED: the CPU has no AVX-512 (avx512f/bw/vl/dq)");
            return;
        };
        // Hand-derived values first, so that the reference itself is checked.
        assert_eq!(reference(0x3f80_8000), 0x3f80);
        assert_eq!(reference(0x3f81_8000), 0x3f82);
        assert_eq!(reference(0x7f7f_ffff), 0x7f80);
        assert_eq!(reference(0xff80_0001), 0xffc0);
        assert_eq!(reference(0x0001_8000), 0x0002);
        let v = inputs();
        // SAFETY: the AVX-512 level was detected just above.
        let got = unsafe { convert_int(&v) };
        check(&got, &v, reference, "integer rounding");
    }

    #[test]
    fn vcvtne2ps2bf16_matches_the_definition_where_the_cpu_has_it() {
        if !profilednn_isa::avx512_bf16() {
            eprintln!("SKIPPED: the CPU has no AVX512-BF16 (vcvtne2ps2bf16 cannot run here)");
            return;
        }
        let v = inputs();
        // SAFETY: avx512_bf16() checks the AVX-512 level and avx512bf16.
        let got = unsafe { convert_hw(&v) };
        check(&got, &v, reference_hw, "vcvtne2ps2bf16");
    }
}
