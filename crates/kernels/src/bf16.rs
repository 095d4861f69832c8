//! bfloat16 as raw `u16` bits (the top half of an f32), with round-to-nearest-even.

#[inline(always)]
pub fn to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Round to nearest even; NaN stays NaN (quiet).
#[inline(always)]
pub fn from_f32(x: f32) -> u16 {
    let bits = x.to_bits();
    let rounding = 0x7fff + ((bits >> 16) & 1);
    let rounded = (bits.wrapping_add(rounding)) >> 16;
    // A select, not an early return: loops over this stay vectorizable.
    let quiet_nan = (bits >> 16) | 0x40;
    (if x.is_nan() { quiet_nan } else { rounded }) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_to_nearest_even() {
        assert_eq!(to_f32(from_f32(1.0)), 1.0);
        // 1 + 2^-8 is halfway between two bf16 values: ties go to the even mantissa (1.0).
        assert_eq!(to_f32(from_f32(1.0 + 1.0 / 256.0)), 1.0);
        assert_eq!(to_f32(from_f32(1.0 + 3.0 / 256.0)), 1.0 + 4.0 / 256.0);
        assert!(to_f32(from_f32(f32::NAN)).is_nan());
        assert_eq!(to_f32(from_f32(f32::INFINITY)), f32::INFINITY);
    }
}
