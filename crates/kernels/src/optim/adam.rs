//! Adam and AdamW (decoupled weight decay), with amsgrad and maximize (torch.optim.Adam/AdamW).

use super::{for_pieces, Grad, Params};
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

#[inline(always)]
fn one(t: &mut AdamState, c: &AdamConfig, step: u64, r: std::ops::Range<usize>) {
    let bc1 = 1.0 - (c.beta1 as f64).powi(step as i32);
    let bc2 = 1.0 - (c.beta2 as f64).powi(step as i32);
    let step_size = (c.lr as f64 / bc1) as f32;
    let bc2_sqrt = bc2.sqrt() as f32;
    let wd_mul = 1.0 - c.lr * c.weight_decay;
    for i in r {
        let mut p = t.params.get(i);
        let mut g = t.grad.get(i);
        if c.maximize {
            g = -g;
        }
        if c.weight_decay != 0.0 {
            if c.decoupled {
                p *= wd_mul;
            } else {
                g += c.weight_decay * p;
            }
        }
        // torch: exp_avg.lerp_(grad, 1 - beta1); exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
        let m = t.exp_avg[i] + (1.0 - c.beta1) * (g - t.exp_avg[i]);
        let v = t.exp_avg_sq[i] * c.beta2 + (1.0 - c.beta2) * g * g;
        t.exp_avg[i] = m;
        t.exp_avg_sq[i] = v;
        let vv = match t.max_exp_avg_sq.as_deref_mut() {
            Some(mx) => {
                let x = mx[i].max(v);
                mx[i] = x;
                x
            }
            None => v,
        };
        let denom = vv.sqrt() / bc2_sqrt + c.eps;
        t.params.set(i, p - step_size * (m / denom));
    }
}

crate::dispatch! {
    fn adam_range(t: &mut AdamState, c: &AdamConfig, step: u64, r: std::ops::Range<usize>) -> () {
        one(t, c, step, r)
    }
}

pub fn adam_step(isa: Isa, threads: usize, tensors: &mut [AdamState], c: &AdamConfig) {
    for t in tensors.iter_mut() {
        t.step += 1;
    }
    let lens: Vec<usize> = tensors.iter().map(|t| t.params.len()).collect();
    for_pieces(tensors, &lens, threads, 1 << 16, |t, r| {
        let s = t.step;
        adam_range(isa, t, c, s, r)
    });
}
