//! Times are `%g`-formatted milliseconds (`0.0820312`, `207.085`, `1e-05`).
//!
//! They are converted to integer picoseconds instead of `f64` so that sums do not depend on the
//! order of addition: a parallel, chunked scan must give exactly the serial result.

/// Picoseconds per millisecond.
pub const PS_PER_MS: u64 = 1_000_000_000;

/// Parses a non-negative decimal number of milliseconds into picoseconds, rounding to the
/// nearest picosecond. Returns `None` for anything that is not such a number (including
/// negative values, `nan`, `inf`, empty text, or a value over ~200 days).
pub fn parse_ms_to_ps(s: &[u8]) -> Option<u64> {
    let n = s.len();
    let mut i = usize::from(n > 0 && s[0] == b'+');
    let mut mantissa: u64 = 0;
    let mut kept = 0u32; // significant digits kept in the mantissa (at most 18 fit a u64)
    let mut shift: i32 = 0; // power of ten to apply for digits dropped or after the point
    let mut any_digit = false;
    while i < n && s[i].is_ascii_digit() {
        any_digit = true;
        if kept < 18 {
            mantissa = mantissa * 10 + (s[i] - b'0') as u64;
            kept += u32::from(mantissa > 0);
        } else {
            shift += 1;
        }
        i += 1;
    }
    if i < n && s[i] == b'.' {
        i += 1;
        while i < n && s[i].is_ascii_digit() {
            any_digit = true;
            if kept < 18 {
                mantissa = mantissa * 10 + (s[i] - b'0') as u64;
                kept += u32::from(mantissa > 0);
                shift -= 1;
            }
            i += 1;
        }
    }
    if !any_digit {
        return None;
    }
    if i < n && (s[i] == b'e' || s[i] == b'E') {
        i += 1;
        let neg = i < n && s[i] == b'-';
        if i < n && (s[i] == b'+' || s[i] == b'-') {
            i += 1;
        }
        let start = i;
        let mut exp: i32 = 0;
        while i < n && s[i].is_ascii_digit() {
            exp = exp.saturating_mul(10).saturating_add((s[i] - b'0') as i32);
            i += 1;
        }
        if i == start {
            return None;
        }
        shift = shift.saturating_add(if neg { -exp } else { exp });
    }
    if i != n {
        return None;
    }
    if mantissa == 0 {
        return Some(0);
    }
    // value in ps = mantissa * 10^(shift + 9)
    let e10 = shift.saturating_add(9);
    if e10 >= 0 {
        if e10 > 19 {
            return None;
        }
        mantissa.checked_mul(10u64.pow(e10 as u32))
    } else {
        let d = -e10;
        if d > 19 {
            return Some(0);
        }
        let div = 10u64.pow(d as u32);
        let (q, r) = (mantissa / div, mantissa % div);
        Some(if r >= div - r { q + 1 } else { q })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn typical_values() {
        assert_eq!(parse_ms_to_ps(b"0.0820312"), Some(82_031_200));
        assert_eq!(parse_ms_to_ps(b"207.085"), Some(207_085_000_000));
        assert_eq!(parse_ms_to_ps(b"1e-05"), Some(10_000));
        assert_eq!(parse_ms_to_ps(b"1.5e+02"), Some(150 * PS_PER_MS));
        assert_eq!(parse_ms_to_ps(b"0"), Some(0));
        assert_eq!(parse_ms_to_ps(b"42"), Some(42 * PS_PER_MS));
        assert_eq!(parse_ms_to_ps(b"1.23457e-13"), Some(0));
    }

    #[test]
    fn rejects_non_numbers() {
        for bad in [
            &b""[..],
            b"-1",
            b"abc",
            b"1.2.3",
            b"nan",
            b"inf",
            b"1e",
            b".",
            b"12ms",
            b" 1",
        ] {
            assert_eq!(
                parse_ms_to_ps(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    proptest! {
        /// Agrees with f64 parsing to within rounding for every %g-style value.
        #[test]
        fn agrees_with_f64(v in 0.0f64..1.0e6) {
            for s in [format!("{v}"), format!("{v:e}"), format!("{v:.6}")] {
                let ps = parse_ms_to_ps(s.as_bytes()).unwrap() as f64;
                let expect = s.parse::<f64>().unwrap() * PS_PER_MS as f64;
                prop_assert!((ps - expect).abs() <= 1.0 + expect * 1e-15, "{} -> {} vs {}", s, ps, expect);
            }
        }
    }
}
