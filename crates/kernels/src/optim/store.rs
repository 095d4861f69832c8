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

    #[inline(always)]
    pub(crate) fn set(&mut self, i: usize, v: f32) {
        match self {
            Params::F32(p) => p[i] = v,
            Params::Bf16Master { param, master } => {
                master[i] = v;
                param[i] = bf16::from_f32(v);
            }
            Params::Bf16Split { param, low } => {
                // Truncation split: top half is the bf16 parameter (rounded toward zero),
                // the exact f32 survives in the two halves.
                let b = v.to_bits();
                param[i] = (b >> 16) as u16;
                low[i] = b as u16;
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
