//! Parameter and gradient storage.

use crate::bf16;

/// A parameter tensor as the optimizer updates it.
pub enum Params<'a> {
    F32(&'a mut [f32]),
    /// bf16 parameter and its f32 master: the master is updated, the parameter is its rounding.
    Bf16Master {
        param: &'a mut [u16],
        master: &'a mut [f32],
    },
    /// bf16 parameter = top 16 bits of the f32 master; `low` holds the bottom 16 bits.
    Bf16Split {
        param: &'a mut [u16],
        low: &'a mut [u16],
    },
}

impl Params<'_> {
    pub fn len(&self) -> usize {
        match self {
            Params::F32(p) => p.len(),
            Params::Bf16Master { param, .. } => param.len(),
            Params::Bf16Split { param, .. } => param.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same storage, borrowed for a shorter time (to be cut into pieces).
    pub(crate) fn reborrow(&mut self) -> Params<'_> {
        match self {
            Params::F32(p) => Params::F32(p),
            Params::Bf16Master { param, master } => Params::Bf16Master { param, master },
            Params::Bf16Split { param, low } => Params::Bf16Split { param, low },
        }
    }

    /// Elements `..mid` and `mid..`.
    pub(crate) fn split_at(self, mid: usize) -> (Self, Self) {
        match self {
            Params::F32(p) => {
                let (a, b) = p.split_at_mut(mid);
                (Params::F32(a), Params::F32(b))
            }
            Params::Bf16Master { param, master } => {
                let ((p0, p1), (m0, m1)) = (param.split_at_mut(mid), master.split_at_mut(mid));
                (
                    Params::Bf16Master {
                        param: p0,
                        master: m0,
                    },
                    Params::Bf16Master {
                        param: p1,
                        master: m1,
                    },
                )
            }
            Params::Bf16Split { param, low } => {
                let ((p0, p1), (l0, l1)) = (param.split_at_mut(mid), low.split_at_mut(mid));
                (
                    Params::Bf16Split { param: p0, low: l0 },
                    Params::Bf16Split { param: p1, low: l1 },
                )
            }
        }
    }

    /// The f32 value of element `i`.
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> f32 {
        match self {
            Params::F32(p) => p[i],
            Params::Bf16Master { master, .. } => master[i],
            Params::Bf16Split { param, low } => {
                f32::from_bits(((param[i] as u32) << 16) | low[i] as u32)
            }
        }
    }
}

/// A gradient: f32, or bf16 (the gradient of a bf16 parameter).
#[derive(Clone, Copy)]
pub enum Grad<'a> {
    F32(&'a [f32]),
    Bf16(&'a [u16]),
}

impl Grad<'_> {
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> f32 {
        match self {
            Grad::F32(g) => g[i],
            Grad::Bf16(g) => bf16::to_f32(g[i]),
        }
    }
    /// Elements `..mid` and `mid..`.
    pub(crate) fn split_at(self, mid: usize) -> (Self, Self) {
        match self {
            Grad::F32(g) => {
                let (a, b) = g.split_at(mid);
                (Grad::F32(a), Grad::F32(b))
            }
            Grad::Bf16(g) => {
                let (a, b) = g.split_at(mid);
                (Grad::Bf16(a), Grad::Bf16(b))
            }
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Grad::F32(g) => g.len(),
            Grad::Bf16(g) => g.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Runs `f(param, grad, i) -> new param` over `r`, with the storage kinds matched once outside
/// the loop so that each combination compiles to its own (vectorizable) loop.
#[inline(always)]
pub(crate) fn update(
    params: &mut Params,
    grad: Grad,
    r: std::ops::Range<usize>,
    mut f: impl FnMut(f32, f32, usize) -> f32,
) {
    match (params, grad) {
        (Params::F32(p), Grad::F32(g)) => {
            let (p, g) = (&mut p[r.clone()], &g[r.clone()]);
            for (k, (pi, gi)) in p.iter_mut().zip(g).enumerate() {
                *pi = f(*pi, *gi, r.start + k);
            }
        }
        (Params::F32(p), Grad::Bf16(g)) => {
            let (p, g) = (&mut p[r.clone()], &g[r.clone()]);
            for (k, (pi, gi)) in p.iter_mut().zip(g).enumerate() {
                *pi = f(*pi, bf16::to_f32(*gi), r.start + k);
            }
        }
        // bf16 storage: the gradient kind is matched here too, so that no per-element `match`
        // keeps the loop from vectorizing.
        (Params::Bf16Master { param, master }, Grad::F32(g)) => {
            let (param, master, g) = (&mut param[r.clone()], &mut master[r.clone()], &g[r.clone()]);
            for (k, ((b, m), gi)) in param.iter_mut().zip(master.iter_mut()).zip(g).enumerate() {
                let v = f(*m, *gi, r.start + k);
                *m = v;
                *b = bf16::from_f32(v);
            }
        }
        (Params::Bf16Master { param, master }, Grad::Bf16(g)) => {
            let (param, master, g) = (&mut param[r.clone()], &mut master[r.clone()], &g[r.clone()]);
            for (k, ((b, m), gi)) in param.iter_mut().zip(master.iter_mut()).zip(g).enumerate() {
                let v = f(*m, bf16::to_f32(*gi), r.start + k);
                *m = v;
                *b = bf16::from_f32(v);
            }
        }
        (Params::Bf16Split { param, low }, Grad::F32(g)) => {
            let (param, low, g) = (&mut param[r.clone()], &mut low[r.clone()], &g[r.clone()]);
            for (k, ((hi, lo), gi)) in param.iter_mut().zip(low.iter_mut()).zip(g).enumerate() {
                let p = f32::from_bits(((*hi as u32) << 16) | *lo as u32);
                let b = f(p, *gi, r.start + k).to_bits();
                *hi = (b >> 16) as u16;
                *lo = b as u16;
            }
        }
        (Params::Bf16Split { param, low }, Grad::Bf16(g)) => {
            let (param, low, g) = (&mut param[r.clone()], &mut low[r.clone()], &g[r.clone()]);
            for (k, ((hi, lo), gi)) in param.iter_mut().zip(low.iter_mut()).zip(g).enumerate() {
                let p = f32::from_bits(((*hi as u32) << 16) | *lo as u32);
                let b = f(p, bf16::to_f32(*gi), r.start + k).to_bits();
                *hi = (b >> 16) as u16;
                *lo = b as u16;
            }
        }
    }
}
