//! SGD with momentum, dampening, Nesterov, weight decay and maximize (torch.optim.SGD).

use super::{for_pieces, Grad, Params};
use crate::Isa;

#[derive(Debug, Clone, Copy)]
pub struct SgdConfig {
    pub lr: f32,
    pub momentum: f32,
    pub dampening: f32,
    pub weight_decay: f32,
    pub nesterov: bool,
    pub maximize: bool,
}

/// One tensor's step: `buf` is its momentum buffer (`None` when momentum is 0);
/// `first` says the buffer is not initialised yet (torch clones the gradient then).
pub struct SgdTensor<'a> {
    pub params: Params<'a>,
    pub grad: Grad<'a>,
    pub momentum_buffer: Option<&'a mut [f32]>,
    pub first: bool,
}

#[inline(always)]
fn one(t: &mut SgdTensor, c: &SgdConfig, r: std::ops::Range<usize>) {
    for i in r {
        let p = t.params.get(i);
        let mut g = t.grad.get(i);
        if c.maximize {
            g = -g;
        }
        if c.weight_decay != 0.0 {
            g += c.weight_decay * p;
        }
        if let Some(buf) = t.momentum_buffer.as_deref_mut() {
            let b = if t.first {
                g
            } else {
                c.momentum * buf[i] + (1.0 - c.dampening) * g
            };
            buf[i] = b;
            g = if c.nesterov { g + c.momentum * b } else { b };
        }
        t.params.set(i, p - c.lr * g);
    }
}

crate::dispatch! {
    fn sgd_range(t: &mut SgdTensor, c: &SgdConfig, r: std::ops::Range<usize>) -> () {
        one(t, c, r)
    }
}

/// One step over all tensors.
pub fn sgd_step(isa: Isa, threads: usize, tensors: &mut [SgdTensor], c: &SgdConfig) {
    let lens: Vec<usize> = tensors.iter().map(|t| t.params.len()).collect();
    for_pieces(tensors, &lens, threads, 1 << 16, |t, r| sgd_range(isa, t, c, r));
    for t in tensors.iter_mut() {
        t.first = false;
    }
}

