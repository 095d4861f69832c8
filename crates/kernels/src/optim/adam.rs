//! Adam and AdamW (decoupled weight decay), with amsgrad and maximize (torch.optim.Adam/AdamW).

use super::split::{for_split_pieces, split_option, Split};
use super::{Grad, Params};
use crate::Isa;

#[derive(Debug, Clone, Copy)]
pub struct AdamConfig {
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
    /// AdamW: weight decay applied to the parameter, not added to the gradient.
    pub decoupled: bool,
    pub amsgrad: bool,
    pub maximize: bool,
}

/// One tensor's state.
pub struct AdamState<'a> {
    pub params: Params<'a>,
    pub grad: Grad<'a>,
    pub exp_avg: &'a mut [f32],
    pub exp_avg_sq: &'a mut [f32],
    pub max_exp_avg_sq: Option<&'a mut [f32]>,
    /// Steps taken so far by this tensor (incremented by the step).
    pub step: u64,
}

impl AdamState<'_> {
    pub(crate) fn reborrow(&mut self) -> AdamState<'_> {
        AdamState {
            params: self.params.reborrow(),
            grad: self.grad,
            exp_avg: self.exp_avg,
            exp_avg_sq: self.exp_avg_sq,
            max_exp_avg_sq: self.max_exp_avg_sq.as_deref_mut(),
            step: self.step,
        }
    }
}

impl Split for AdamState<'_> {
    fn len(&self) -> usize {
        self.params.len()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (p0, p1) = self.params.split_at(mid);
        let (g0, g1) = self.grad.split_at(mid);
        let (m0, m1) = self.exp_avg.split_at_mut(mid);
        let (v0, v1) = self.exp_avg_sq.split_at_mut(mid);
        let (x0, x1) = split_option(self.max_exp_avg_sq, mid);
        let step = self.step;
        (
            AdamState {
                params: p0,
                grad: g0,
                exp_avg: m0,
                exp_avg_sq: v0,
                max_exp_avg_sq: x0,
                step,
            },
            AdamState {
                params: p1,
                grad: g1,
                exp_avg: m1,
                exp_avg_sq: v1,
                max_exp_avg_sq: x1,
                step,
            },
        )
    }
}

#[inline(always)]
fn one(t: &mut AdamState, c: &AdamConfig, step: u64, r: std::ops::Range<usize>) {
    let bc1 = 1.0 - (c.beta1 as f64).powi(step as i32);
    let bc2 = 1.0 - (c.beta2 as f64).powi(step as i32);
    let step_size = (c.lr as f64 / bc1) as f32;
    let bc2_sqrt = bc2.sqrt() as f32;
    let wd_mul = 1.0 - c.lr * c.weight_decay;
    let sign = if c.maximize { -1.0 } else { 1.0 };
    let (b1, b2, eps, wd, decoupled) = (c.beta1, c.beta2, c.eps, c.weight_decay, c.decoupled);
    let (m_all, v_all) = (&mut t.exp_avg[..], &mut t.exp_avg_sq[..]);
    let grad = t.grad;
    match t.max_exp_avg_sq.as_deref_mut() {
        None => super::store::update(&mut t.params, grad, r, |p, g, i| {
            let (p, g) = if decoupled {
                (p * wd_mul, sign * g)
            } else {
                (p, sign * g + wd * p)
            };
            let m = m_all[i] + (1.0 - b1) * (g - m_all[i]);
            let v = v_all[i] * b2 + (1.0 - b2) * g * g;
            m_all[i] = m;
            v_all[i] = v;
            p - step_size * (m / (v.sqrt() / bc2_sqrt + eps))
        }),
        Some(mx) => super::store::update(&mut t.params, grad, r, |p, g, i| {
            let (p, g) = if decoupled {
                (p * wd_mul, sign * g)
            } else {
                (p, sign * g + wd * p)
            };
            let m = m_all[i] + (1.0 - b1) * (g - m_all[i]);
            let v = v_all[i] * b2 + (1.0 - b2) * g * g;
            m_all[i] = m;
            v_all[i] = v;
            let x = mx[i].max(v);
            mx[i] = x;
            p - step_size * (m / (x.sqrt() / bc2_sqrt + eps))
        }),
    }
}

crate::dispatch! {
    fn adam_range(t: &mut AdamState, c: &AdamConfig, step: u64, r: std::ops::Range<usize>) -> () {
        one(t, c, step, r)
    }
}

/// f32 parameters without amsgrad on AVX-512: the hand-written loop (`avx512`); `false` when
/// this tensor or CPU takes the portable loop. The constants as `one` derives them.
fn hand_written(
    isa: Isa,
    t: &mut AdamState,
    c: &AdamConfig,
    step: u64,
    r: std::ops::Range<usize>,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let (Params::F32(p), Grad::F32(g), None) =
        (&mut t.params, t.grad, t.max_exp_avg_sq.as_deref_mut())
    {
        let bc1 = 1.0 - (c.beta1 as f64).powi(step as i32);
        let bc2 = 1.0 - (c.beta2 as f64).powi(step as i32);
        let s = super::avx512::Adam {
            sign: if c.maximize { -1.0 } else { 1.0 },
            wd: c.weight_decay,
            wd_mul: 1.0 - c.lr * c.weight_decay,
            decoupled: c.decoupled,
            b1: c.beta1,
            b2: c.beta2,
            step_size: (c.lr as f64 / bc1) as f32,
            bc2_sqrt: bc2.sqrt() as f32,
            eps: c.eps,
            prefetch: super::avx512::software_prefetch(),
        };
        let (m, v) = (&mut t.exp_avg[r.clone()], &mut t.exp_avg_sq[r.clone()]);
        return super::avx512::adam(isa, &mut p[r.clone()], &g[r.clone()], m, v, s);
    }
    let _ = (isa, t, c, step, r);
    false
}

pub fn adam_step(isa: Isa, threads: usize, tensors: &mut [AdamState], c: &AdamConfig) {
    for t in tensors.iter_mut() {
        t.step += 1;
    }
    let pieces = tensors.iter_mut().map(AdamState::reborrow).collect();
    for_split_pieces(pieces, threads, |t, r| {
        let s = t.step;
        if !hand_written(isa, t, c, s, r.clone()) {
            adam_range(isa, t, c, s, r)
        }
    });
}
