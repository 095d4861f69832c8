//! One element of the sigmoid focal loss and its derivative, in stable forms.
//!
//! With p = σ(x), q = σ(−x) = 1 − p, soft target t ∈ [0, 1]:
//! * ce = max(x, 0) − x·t + ln(1 + e^−|x|)        (BCE with logits, never overflows)
//! * m = 1 − p_t = p·(1 − t) + q·t, p − t = p·(1 − t) − q·t (no cancellation)
//! * loss = α_t · ce · m^γ, α_t = α·t + (1 − α)·(1 − t) (α < 0: no weighting)
//! * dloss/dx = α_t · ((p − t)·m^γ + ce · γ·m^(γ−1) · dm/dx), dm/dx = −p·q·(2t − 1)

use crate::vmath::{exp, ln, ln_1p_small};

/// How m^γ is computed: the common γ get exact products instead of exp/ln.
pub const GAMMA_0: u8 = 0;
pub const GAMMA_1: u8 = 1;
pub const GAMMA_2: u8 = 2;
pub const GAMMA_ANY: u8 = 3;

pub fn gamma_mode(gamma: f32) -> u8 {
    if gamma == 0.0 {
        GAMMA_0
    } else if gamma == 1.0 {
        GAMMA_1
    } else if gamma == 2.0 {
        GAMMA_2
    } else {
        GAMMA_ANY
    }
}

/// (loss, dloss/dx) of one element.
#[inline(always)]
pub fn focal<const G: u8>(x: f32, t: f32, alpha: f32, gamma: f32, weighted: bool) -> (f32, f32) {
    let e = exp(-x.abs());
    let inv = 1.0 / (1.0 + e);
    let pos = x >= 0.0;
    let p = if pos { inv } else { e * inv };
    let q = if pos { e * inv } else { inv };
    let ce = x.max(0.0) - x * t + ln_1p_small(e);
    // p·(1 − t) as p − p·t (exact at t ∈ {0, 1}); p − t = p·(1 − t) − q·t, so that neither
    // m nor p − t cancels when p is near 1 and q tiny.
    let pnt = (-p).mul_add(t, p);
    let m = q.mul_add(t, pnt);
    let p_minus_t = (-q).mul_add(t, pnt);
    let (w, dw) = match G {
        GAMMA_0 => (1.0, 0.0),
        GAMMA_1 => (m, 1.0),
        GAMMA_2 => (m * m, 2.0 * m),
        _ => {
            let lm = ln(m);
            let w = if m > 0.0 { exp(gamma * lm) } else { 0.0 };
            let dw = if m > 0.0 {
                gamma * exp((gamma - 1.0) * lm)
            } else {
                0.0
            };
            (w, dw)
        }
    };
    let at = if weighted {
        alpha * t + (1.0 - alpha) * (1.0 - t)
    } else {
        1.0
    };
    let dm = -p * q * (2.0 * t - 1.0);
    let loss = at * ce * w;
    let grad = at * (p_minus_t * w + ce * dw * dm);
    (loss, grad)
}
