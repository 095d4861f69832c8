//! Counts computed from a log's numbers (dimensions, groups, strides): products and sums that
//! cannot wrap.
//!
//! Every dimension comes from text anyone can write, so `mb1048576ic1048576…oc1048576` must not
//! turn into a wrapped (and plausible-looking) flop count. [`N`] carries a 128-bit value that
//! becomes "too large" on overflow; turning it back into a `u64` is where a problem too large to
//! count becomes [`Unknown`].

use crate::{unknown, Unknown};
use std::ops::{Add, AddAssign, Div, Mul};

/// A non-negative count, or "too large" once any step overflowed 128 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct N(Option<u128>);

impl N {
    pub const ZERO: N = N(Some(0));
    pub const ONE: N = N(Some(1));
    pub const TOO_LARGE: N = N(None);

    /// The value, if it was representable at every step.
    #[cfg(test)]
    pub fn get(self) -> Option<u128> {
        self.0
    }

    /// The count as a `u64`, or why it cannot be one.
    pub fn to_u64(self, what: &str) -> Result<u64, Unknown> {
        self.0
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| too_large(what))
    }

    /// `2^e`, too large past 127.
    pub fn pow2(e: usize) -> N {
        N(u32::try_from(e).ok().and_then(|e| 1u128.checked_shl(e)))
    }
}

/// The reason of a problem whose `what` does not fit 64 bits.
pub fn too_large(what: &str) -> Unknown {
    unknown(format!("too large to count: {what} overflows 64 bits"))
}

impl From<u64> for N {
    fn from(v: u64) -> N {
        N(Some(v as u128))
    }
}

impl From<u128> for N {
    fn from(v: u128) -> N {
        N(Some(v))
    }
}

impl From<bool> for N {
    fn from(v: bool) -> N {
        N(Some(v as u128))
    }
}

impl<T: Into<N>> Mul<T> for N {
    type Output = N;
    fn mul(self, o: T) -> N {
        let o = o.into();
        match (self.0, o.0) {
            // Zero times anything (even "too large") is zero: an empty tensor costs nothing.
            (Some(0), _) | (_, Some(0)) => N::ZERO,
            (Some(a), Some(b)) => N(a.checked_mul(b)),
            _ => N(None),
        }
    }
}

impl<T: Into<N>> Add<T> for N {
    type Output = N;
    fn add(self, o: T) -> N {
        N(self.0.zip(o.into().0).and_then(|(a, b)| a.checked_add(b)))
    }
}

impl<T: Into<N>> AddAssign<T> for N {
    fn add_assign(&mut self, o: T) {
        *self = *self + o;
    }
}

impl Div<u64> for N {
    type Output = N;
    /// Integer division; dividing by zero is "too large" (callers divide by `g >= 1`).
    fn div(self, d: u64) -> N {
        N(self.0.and_then(|a| a.checked_div(d as u128)))
    }
}

impl std::iter::Sum for N {
    fn sum<I: Iterator<Item = N>>(iter: I) -> N {
        iter.fold(N::ZERO, |a, b| a + b)
    }
}

impl std::iter::Product for N {
    fn product<I: Iterator<Item = N>>(iter: I) -> N {
        iter.fold(N::ONE, |a, b| a * b)
    }
}

/// Product of dimensions.
pub fn product(dims: &[u64]) -> N {
    dims.iter().map(|&d| N::from(d)).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_is_too_large_not_wrapped() {
        let big = N::from(u64::MAX);
        assert_eq!((big * 2u64).get(), Some(u64::MAX as u128 * 2));
        assert!((big * 2u64).to_u64("x").is_err());
        assert_eq!((big * big * big).get(), None);
        let zero = N::from(0u64);
        assert_eq!(
            (big * big * big * zero).get(),
            Some(0),
            "zero wins over too large"
        );
        assert_eq!((N::from(u128::MAX) + 1u64).get(), None);
        assert_eq!(N::pow2(3).get(), Some(8));
        assert_eq!(N::pow2(200).get(), None);
        assert_eq!((N::from(7u64) / 0).get(), None);
        assert_eq!(
            (big * 2u64).to_u64("flops").unwrap_err().reason,
            "too large to count: flops overflows 64 bits"
        );
    }
}
