//! SGD and Adam/AdamW for bf16 parameters kept the way torch's `fused=True` keeps them: the
//! parameter *and* its state (momentum buffer; first and second moments) in bf16, each step
//! computed in f32 and rounded to nearest even when stored. No master: an update smaller than
//! half a bf16 ulp of the parameter is lost, exactly the trade torch's layout makes — for the
//! fewest bytes a step can move (SGD with momentum 10 per parameter, AdamW 14, against 18 and 26
//! for the exact `Bf16Split` layout). The arithmetic is `sgd.rs`'s and `adam.rs`'s, in their
//! order, on the widened values (a plain SGD step there leaves out multiplies by 1 and the add
//! of 0·p, which change no finite value: `optim::plain`).

use super::split::{for_split_pieces, split_option, Split};
use super::{AdamConfig, SgdConfig};
use crate::bf16;
use crate::Isa;

/// One bf16 parameter with bf16 SGD state.
pub struct SgdBf16Tensor<'a> {
    pub param: &'a mut [u16],
    pub grad: &'a [u16],
    /// `None` when momentum is 0.
    pub momentum_buffer: Option<&'a mut [u16]>,
    /// The buffer is not initialised yet (torch clones the gradient then).
    pub first: bool,
}

/// One bf16 parameter with bf16 Adam state (no amsgrad).
pub struct AdamBf16State<'a> {
    pub param: &'a mut [u16],
    pub grad: &'a [u16],
    pub exp_avg: &'a mut [u16],
    pub exp_avg_sq: &'a mut [u16],
    /// Steps taken so far by this tensor (incremented by the step).
    pub step: u64,
}

impl SgdBf16Tensor<'_> {
    fn reborrow(&mut self) -> SgdBf16Tensor<'_> {
        SgdBf16Tensor {
            param: self.param,
            grad: self.grad,
            momentum_buffer: self.momentum_buffer.as_deref_mut(),
            first: self.first,
        }
    }
}

impl Split for SgdBf16Tensor<'_> {
    fn len(&self) -> usize {
        self.param.len()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (p0, p1) = self.param.split_at_mut(mid);
        let (g0, g1) = self.grad.split_at(mid);
        let (b0, b1) = split_option(self.momentum_buffer, mid);
        let first = self.first;
        (
            SgdBf16Tensor {
                param: p0,
                grad: g0,
                momentum_buffer: b0,
                first,
            },
            SgdBf16Tensor {
                param: p1,
                grad: g1,
                momentum_buffer: b1,
                first,
            },
        )
    }
}

impl AdamBf16State<'_> {
    fn reborrow(&mut self) -> AdamBf16State<'_> {
        AdamBf16State {
            param: self.param,
            grad: self.grad,
            exp_avg: self.exp_avg,
            exp_avg_sq: self.exp_avg_sq,
            step: self.step,
        }
    }
}

impl Split for AdamBf16State<'_> {
    fn len(&self) -> usize {
        self.param.len()
    }
    fn split_at(self, mid: usize) -> (Self, Self) {
        let (p0, p1) = self.param.split_at_mut(mid);
        let (g0, g1) = self.grad.split_at(mid);
        let (m0, m1) = self.exp_avg.split_at_mut(mid);
        let (v0, v1) = self.exp_avg_sq.split_at_mut(mid);
        let step = self.step;
        (
            AdamBf16State {
                param: p0,
                grad: g0,
                exp_avg: m0,
                exp_avg_sq: v0,
                step,
            },
            AdamBf16State {
                param: p1,
                grad: g1,
                exp_avg: m1,
                exp_avg_sq: v1,
                step,
            },
        )
    }
}

#[inline(always)]
fn sgd_one(t: &mut SgdBf16Tensor, c: &SgdConfig) {
    let sign = if c.maximize { -1.0 } else { 1.0 };
    let (wd, mom, damp, lr) = (c.weight_decay, c.momentum, 1.0 - c.dampening, c.lr);
    let (param, grad) = (&mut *t.param, t.grad);
    assert_eq!(grad.len(), param.len());
    match t.momentum_buffer.as_deref_mut() {
        None => {
            for (p, g) in param.iter_mut().zip(grad) {
                let pv = bf16::to_f32(*p);
                let gv = sign * bf16::to_f32(*g) + wd * pv;
                *p = bf16::from_f32(pv - lr * gv);
            }
        }
        Some(buf) => {
            assert_eq!(buf.len(), param.len());
            macro_rules! go {
                ($first:expr, $nesterov:expr) => {
                    for ((p, g), b) in param.iter_mut().zip(grad).zip(buf.iter_mut()) {
                        let pv = bf16::to_f32(*p);
                        let gv = sign * bf16::to_f32(*g) + wd * pv;
                        let bv = if $first {
                            gv
                        } else {
                            mom * bf16::to_f32(*b) + damp * gv
                        };
                        *b = bf16::from_f32(bv);
                        *p = bf16::from_f32(pv - lr * if $nesterov { gv + mom * bv } else { bv });
                    }
                };
            }
            with_sgd_flags!(t.first, c.nesterov, go)
        }
    }
}

crate::dispatch! {
    fn sgd_tensor(t: &mut SgdBf16Tensor, c: &SgdConfig) -> () {
        sgd_one(t, c)
    }
}

/// One SGD step over all tensors, on `threads` threads (whole tensors per thread, those larger
/// than a thread's share in pieces: `split`).
pub fn sgd_step_bf16(isa: Isa, threads: usize, tensors: &mut [SgdBf16Tensor], c: &SgdConfig) {
    let pieces = tensors.iter_mut().map(SgdBf16Tensor::reborrow).collect();
    for_split_pieces(pieces, threads, |t, _| sgd_tensor(isa, t, c));
    for t in tensors.iter_mut() {
        t.first = false;
    }
}

#[inline(always)]
fn adam_one(t: &mut AdamBf16State, c: &AdamConfig) {
    // The constants as `adam.rs` derives them.
    let bc1 = 1.0 - (c.beta1 as f64).powi(t.step as i32);
    let bc2 = 1.0 - (c.beta2 as f64).powi(t.step as i32);
    let step_size = (c.lr as f64 / bc1) as f32;
    let bc2_sqrt = bc2.sqrt() as f32;
    let wd_mul = 1.0 - c.lr * c.weight_decay;
    let sign = if c.maximize { -1.0 } else { 1.0 };
    let (b1, b2, eps, wd) = (c.beta1, c.beta2, c.eps, c.weight_decay);
    let n = t.param.len();
    assert!(t.grad.len() == n && t.exp_avg.len() == n && t.exp_avg_sq.len() == n);
    macro_rules! go {
        ($decoupled:expr) => {
            for (((p, g), m), v) in t
                .param
                .iter_mut()
                .zip(t.grad)
                .zip(t.exp_avg.iter_mut())
                .zip(t.exp_avg_sq.iter_mut())
            {
                let (pv, gv) = (bf16::to_f32(*p), sign * bf16::to_f32(*g));
                let (pv, gv) = if $decoupled {
                    (pv * wd_mul, gv)
                } else {
                    (pv, gv + wd * pv)
                };
                let (m0, v0) = (bf16::to_f32(*m), bf16::to_f32(*v));
                let mv = m0 + (1.0 - b1) * (gv - m0);
                let vv = v0 * b2 + (1.0 - b2) * gv * gv;
                *m = bf16::from_f32(mv);
                *v = bf16::from_f32(vv);
                *p = bf16::from_f32(pv - step_size * (mv / (vv.sqrt() / bc2_sqrt + eps)));
            }
        };
    }
    if c.decoupled {
        go!(true)
    } else {
        go!(false)
    }
}

crate::dispatch! {
    fn adam_tensor(t: &mut AdamBf16State, c: &AdamConfig) -> () {
        adam_one(t, c)
    }
}

/// One Adam/AdamW step over all tensors (`c.amsgrad` is not supported in this layout: the
/// caller keeps such tensors in another).
pub fn adam_step_bf16(isa: Isa, threads: usize, tensors: &mut [AdamBf16State], c: &AdamConfig) {
    assert!(
        tensors.is_empty() || !c.amsgrad,
        "amsgrad needs the f32 state layouts"
    );
    for t in tensors.iter_mut() {
        t.step += 1;
    }
    let pieces = tensors.iter_mut().map(AdamBf16State::reborrow).collect();
    for_split_pieces(pieces, threads, |t, _| adam_tensor(isa, t, c));
}
