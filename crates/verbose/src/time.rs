//! Times are `%g`-formatted milliseconds (`0.0820312`, `207.085`, `1e-05`).
//!
//! They are converted to integer picoseconds instead of `f64` so that sums do not depend on the
//! order of addition: a parallel, chunked scan must give exactly the serial result.

/// Picoseconds per millisecond.
pub const PS_PER_MS: u64 = 1_000_000_000;

/// A plain decimal `digits[.digits]` (a timestamp, `1733316812345.678`) as the `f64`
/// `str::parse` gives, without its general parser: when the digits, point removed, are at most
/// 2^53 and at most 22 of them follow the point, `M / 10^k` is the exact quotient of two exact
/// doubles, rounded once — the correctly rounded value, the very bits `parse` returns (Clinger's
/// fast path, which `parse` takes itself). Anything else (more digits, an exponent, a sign):
/// `parse`.
pub fn parse_decimal_f64(s: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let fallback = || std::str::from_utf8(s).ok()?.parse::<f64>().ok();
    let mut m: u64 = 0;
    let mut frac: Option<usize> = None;
    let mut digits = 0usize;
    for &c in s {
        match c {
            b'0'..=b'9' => {
                if digits >= 19 {
                    return fallback();
                }
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
                if let Some(f) = frac.as_mut() {
                    *f += 1;
                }
            }
            b'.' if frac.is_none() => frac = Some(0),
            _ => return fallback(),
        }
    }
    let k = frac.unwrap_or(0);
    if digits == 0 || m > (1u64 << 53) || k > 22 {
        return fallback();
    }
    Some(m as f64 / POW10[k])
}

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
    /// The fast path gives the bits `str::parse` gives, on timestamps and on the cases it hands
    /// over (an exponent, too many digits, a sign, junk).
    #[test]
    fn decimal_fast_path_is_parse() {
        let mut cases: Vec<String> = [
            "1733316812345.678",
            "1700000000000",
            "0.1",
            "0.3",
            "123.456789",
            "9007199254740993",
            "9007199254740992",
            "1e3",
            "-1.5",
            "+2",
            "1.",
            ".5",
            "12345678901234567890.5",
            "0.0000000000000000000000001",
            "1.2.3",
            "",
            ".",
            "abc",
            "1733316812345.6789012345",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Timestamps of every millisecond fraction over a stretch.
        for i in 0..2000u64 {
            cases.push(format!(
                "1733316812{:03}.{:03}",
                i % 1000,
                (i * 7919) % 1000
            ));
        }
        for c in &cases {
            let want = c.parse::<f64>().ok();
            let got = super::parse_decimal_f64(c.as_bytes());
            assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{c:?}");
        }
    }

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
