//! The two spellings of problem descriptors: letter-number ("desc style", `mb2ic64ih56`) and
//! `x`-separated dimensions ("dims style", `2x64x56x56`, with `:` between tensors).

/// A "desc style" descriptor read as `name → value` pairs.
///
/// Parsing keys on the letter prefixes, not on positions, because their order changed across
/// versions (v0.x–v2.2 print `mb2_g1ic3…`, v2.3+ `g1mb2_ic3…`; pooling moved `d` and `s`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Descriptor {
    /// Name, value as written (validated as a number).
    pairs: Vec<(String, String)>,
}

impl Descriptor {
    /// `None` when the text is not a sequence of `letters number` pairs (`_` ignored).
    pub fn parse(s: &str) -> Option<Descriptor> {
        let b = s.as_bytes();
        let mut i = 0;
        let mut pairs = Vec::new();
        while i < b.len() {
            if b[i] == b'_' {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_lowercase() {
                i += 1;
            }
            if i == start {
                return None;
            }
            let name = &s[start..i];
            let vstart = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'-') {
                i += 1;
            }
            let value = &s[vstart..i];
            value.parse::<f64>().ok()?;
            pairs.push((name.to_string(), value.to_string()));
        }
        if pairs.is_empty() {
            None
        } else {
            Some(Descriptor { pairs })
        }
    }

    /// An integer field; `None` when absent, not a non-negative integer, or over 64 bits.
    /// Read as an integer, not through `f64`: `mb9007199254740993` is not rounded.
    pub fn get(&self, name: &str) -> Option<u64> {
        let v = &self.pairs.iter().find(|(n, _)| n == name)?.1;
        if let Ok(n) = v.parse::<u64>() {
            return Some(n);
        }
        // `5.0` and the like: an integer only when exactly representable.
        let f: f64 = v.parse().ok()?;
        (f >= 0.0 && f.fract() == 0.0 && f < 9007199254740992.0).then_some(f as u64)
    }

    /// A field as a real number (`beta0.75`).
    pub fn number(&self, name: &str) -> Option<f64> {
        self.pairs.iter().find(|(n, _)| n == name)?.1.parse().ok()
    }

    pub fn get_or(&self, name: &str, default: u64) -> u64 {
        self.get(name).unwrap_or(default)
    }

    pub fn has(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }
}

/// Dimensions of one tensor (`2x64x56x56`). Run-time dimensions (`*`) make it unknown.
pub fn parse_dims(s: &str) -> Option<Vec<u64>> {
    if s.is_empty() {
        return None;
    }
    s.split('x').map(|d| d.parse::<u64>().ok()).collect()
}

/// Tensors of a dims-style problem, and the destination older versions appended.
pub type DimsList = (Vec<Vec<u64>>, Option<Vec<u64>>);

/// The `:`-separated tensors of a dims-style descriptor. Versions before 2.3 append the
/// destination after a space (`SRC0:SRC1 DST`); that part is returned separately.
pub fn parse_dims_list(s: &str) -> Option<DimsList> {
    let (main, extra) = match s.split_once(' ') {
        Some((m, e)) => (m, Some(e.trim())),
        None => (s, None),
    };
    let tensors = main
        .split(':')
        .map(parse_dims)
        .collect::<Option<Vec<_>>>()?;
    let extra = match extra {
        Some(e) if !e.is_empty() => Some(parse_dims(e)?),
        _ => None,
    };
    Some((tensors, extra))
}

pub use crate::count::product;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desc_style_in_any_order() {
        let a =
            Descriptor::parse("g2mb1_ic96oc256_ih27oh27kh5sh1dh0ph2_iw27ow27kw5sw1dw0pw2").unwrap();
        let b =
            Descriptor::parse("mb1_g2ic96oc256_ih27oh27kh5sh1dh0ph2_iw27ow27kw5sw1dw0pw2").unwrap();
        for k in [
            "g", "mb", "ic", "oc", "ih", "oh", "kh", "sh", "dh", "ph", "iw", "pw",
        ] {
            assert_eq!(a.get(k), b.get(k), "{k}");
        }
        assert_eq!(a.get("oc"), Some(256));
        assert_eq!(a.get("kd"), None);
        let lrn = Descriptor::parse("mb1ic96ih55iw55ls5beta0.75").unwrap();
        assert_eq!(lrn.get("ls"), Some(5));
        assert_eq!(lrn.get("beta"), None, "not an integer");
        assert!(lrn.has("beta"));
        assert!(Descriptor::parse("2x64x56x56").is_none());
        let big = Descriptor::parse("mb9007199254740993ic18446744073709551616").unwrap();
        assert_eq!(
            big.get("mb"),
            Some(9007199254740993),
            "read exactly, not via f64"
        );
        assert_eq!(
            big.get("ic"),
            None,
            "over 64 bits is not a silently rounded number"
        );
        assert!(Descriptor::parse("").is_none());
    }

    #[test]
    fn dims_style() {
        assert_eq!(parse_dims("2x64x1x1"), Some(vec![2, 64, 1, 1]));
        assert_eq!(parse_dims("*x64"), None);
        let (t, dst) = parse_dims_list("8x64x56x56:1x64x1x1 8x64x56x56").unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(dst, Some(vec![8, 64, 56, 56]));
        assert_eq!(parse_dims_list("0x16").unwrap().0[0], vec![0, 16]);
    }
}
