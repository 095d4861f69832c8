//! SGD with momentum, dampening, Nesterov, weight decay and maximize (torch.optim.SGD).

use super::split::{for_split_pieces, split_option, Split};
use super::{Grad, Params};
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

impl SgdTensor<'_> {
    fn reborrow(&mut self) -> SgdTensor<'_> {
        SgdTensor {
            params: self.params.reborrow(),
            grad: self.grad,
            momentum_buffer: self.momentum_buffer.as_deref_mut(),
            first: self.first,
        }
    }
}

impl Split for SgdTensor<'_> {
    fn len(&self) -> usize {
        self.params.len()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (p0, p1) = self.params.split_at(mid);
        let (g0, g1) = self.grad.split_at(mid);
        let (b0, b1) = split_option(self.momentum_buffer, mid);
        let first = self.first;
        (
            SgdTensor {
                params: p0,
                grad: g0,
                momentum_buffer: b0,
                first,
            },
            SgdTensor {
                params: p1,
                grad: g1,
                momentum_buffer: b1,
                first,
            },
        )
    }
}

#[inline(always)]
fn one(t: &mut SgdTensor, c: &SgdConfig, r: std::ops::Range<usize>) {
    let sign = if c.maximize { -1.0 } else { 1.0 };
    let (wd, mom, damp, lr) = (c.weight_decay, c.momentum, 1.0 - c.dampening, c.lr);
    let plain = super::plain(sign, wd, damp);
    let grad = t.grad;
    match t.momentum_buffer.as_deref_mut() {
        None => super::store::update(&mut t.params, grad, r, |p, g, _| {
            p - lr * (sign * g + wd * p)
        }),
        Some(buf) => {
            let buf = &mut buf[..];
            // `plain` as a literal too, so that each loop is compiled without the operations it
            // leaves out (a value tested inside the loop is computed both ways and selected).
            macro_rules! go {
                ($first:expr, $nesterov:expr, $plain:expr) => {
                    super::store::update(&mut t.params, grad, r, |p, g, i| {
                        let g = if $plain { g } else { sign * g + wd * p };
                        let dg = if $plain { g } else { damp * g };
                        let b = if $first { g } else { mom * buf[i] + dg };
                        buf[i] = b;
                        p - lr * if $nesterov { g + mom * b } else { b }
                    })
                };
            }
            if plain {
                with_sgd_flags!(t.first, c.nesterov, go, true)
            } else {
                with_sgd_flags!(t.first, c.nesterov, go, false)
            }
        }
    }
}

crate::dispatch! {
    fn sgd_range(t: &mut SgdTensor, c: &SgdConfig, r: std::ops::Range<usize>) -> () {
        one(t, c, r)
    }
}

/// One step over all tensors.
/// f32 parameters with momentum on AVX-512: the hand-written loop (`avx512`); `false` when
/// this tensor or CPU takes the portable loop.
fn hand_written(isa: Isa, t: &mut SgdTensor, c: &SgdConfig, r: std::ops::Range<usize>) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let (Params::F32(p), Grad::F32(g), Some(b)) =
        (&mut t.params, t.grad, t.momentum_buffer.as_deref_mut())
    {
        let s = super::avx512::Sgd {
            sign: if c.maximize { -1.0 } else { 1.0 },
            wd: c.weight_decay,
            mom: c.momentum,
            damp: 1.0 - c.dampening,
            lr: c.lr,
            first: t.first,
            nesterov: c.nesterov,
            prefetch: super::avx512::software_prefetch(),
        };
        return super::avx512::sgd(isa, &mut p[r.clone()], &g[r.clone()], &mut b[r], s);
    }
    let _ = (isa, t, c, r);
    false
}

pub fn sgd_step(isa: Isa, threads: usize, tensors: &mut [SgdTensor], c: &SgdConfig) {
    let pieces = tensors.iter_mut().map(SgdTensor::reborrow).collect();
    for_split_pieces(pieces, threads, |t, r| {
        if !hand_written(isa, t, c, r.clone()) {
            sgd_range(isa, t, c, r)
        }
    });
    for t in tensors.iter_mut() {
        t.first = false;
    }
}
