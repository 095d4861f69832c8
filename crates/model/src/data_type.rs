//! Data types of memory descriptors.

use serde::{Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    Undef,
    F64,
    F32,
    Bf16,
    F16,
    S64,
    S32,
    S8,
    U8,
    S4,
    U4,
    Boolean,
    F8E5M2,
    F8E4M3,
    F4E2M1,
    E8M0,
    Other(String),
}

const NAMES: &[(&str, DataType)] = &[
    ("undef", DataType::Undef),
    ("f64", DataType::F64),
    ("f32", DataType::F32),
    ("bf16", DataType::Bf16),
    ("f16", DataType::F16),
    ("s64", DataType::S64),
    ("s32", DataType::S32),
    ("s8", DataType::S8),
    ("u8", DataType::U8),
    ("s4", DataType::S4),
    ("u4", DataType::U4),
    ("boolean", DataType::Boolean),
    ("f8_e5m2", DataType::F8E5M2),
    ("f8_e4m3", DataType::F8E4M3),
    ("f4_e2m1", DataType::F4E2M1),
    ("e8m0", DataType::E8M0),
];

impl DataType {
    /// Parses a data type name; `None` when the text does not look like one at all.
    ///
    /// Names that follow oneDNN's naming pattern but are not known here (`f6_e3m2`, `s16`) are
    /// accepted as `Other`, because the `arg_dt` split of legacy descriptors depends on
    /// recognising them.
    pub fn parse(s: &str) -> Option<Self> {
        if let Some((_, dt)) = NAMES.iter().find(|(n, _)| *n == s) {
            return Some(dt.clone());
        }
        if looks_like_data_type(s) {
            Some(DataType::Other(s.to_string()))
        } else {
            None
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            DataType::Other(s) => s,
            d => NAMES
                .iter()
                .find(|(_, v)| v == d)
                .map(|(n, _)| *n)
                .unwrap_or("?"),
        }
    }

    /// Storage size in bits, when known.
    pub fn bits(&self) -> Option<u32> {
        Some(match self {
            DataType::F64 | DataType::S64 => 64,
            DataType::F32 | DataType::S32 => 32,
            DataType::Bf16 | DataType::F16 => 16,
            DataType::S8
            | DataType::U8
            | DataType::Boolean
            | DataType::F8E5M2
            | DataType::F8E4M3
            | DataType::E8M0 => 8,
            DataType::S4 | DataType::U4 | DataType::F4E2M1 => 4,
            DataType::Undef | DataType::Other(_) => return None,
        })
    }

    pub fn is_undef(&self) -> bool {
        matches!(self, DataType::Undef)
    }
}

/// oneDNN's data type spellings: `[b]fN[_eXmY]`, `sN`, `uN`, `eXmY`, `undef`, `boolean`.
fn looks_like_data_type(s: &str) -> bool {
    let (head, tail) = match s.split_once('_') {
        Some((h, t)) => (h, Some(t)),
        None => (s, None),
    };
    let head_ok = {
        let hb = head.as_bytes();
        match hb.first() {
            Some(b'f') | Some(b's') | Some(b'u') => {
                hb.len() > 1 && hb[1..].iter().all(|c| c.is_ascii_digit())
            }
            Some(b'b') => {
                hb.len() > 2 && hb[1] == b'f' && hb[2..].iter().all(|c| c.is_ascii_digit())
            }
            Some(b'e') => is_exp_mant(head),
            _ => false,
        }
    };
    head_ok && tail.is_none_or(is_exp_mant)
}

fn is_exp_mant(s: &str) -> bool {
    // eXmY
    let b = s.as_bytes();
    if b.first() != Some(&b'e') {
        return false;
    }
    match s[1..].split_once('m') {
        Some((e, m)) => {
            !e.is_empty()
                && !m.is_empty()
                && e.bytes().all(|c| c.is_ascii_digit())
                && m.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for DataType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_pattern_names() {
        assert_eq!(DataType::parse("bf16"), Some(DataType::Bf16));
        assert_eq!(DataType::parse("f8_e4m3"), Some(DataType::F8E4M3));
        assert_eq!(
            DataType::parse("f6_e3m2"),
            Some(DataType::Other("f6_e3m2".into()))
        );
        assert_eq!(DataType::parse("s16"), Some(DataType::Other("s16".into())));
        assert_eq!(DataType::parse("src"), None);
        assert_eq!(DataType::parse("dst"), None);
        assert_eq!(DataType::parse("iter"), None);
        assert_eq!(DataType::parse("layer"), None);
        assert_eq!(DataType::parse("f"), None);
        assert_eq!(DataType::Bf16.bits(), Some(16));
    }
}
