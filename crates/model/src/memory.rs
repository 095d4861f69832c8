//! Memory descriptors: one tensor argument of a primitive.

use crate::DataType;
use serde::Serialize;
use std::fmt;

/// How a tensor's memory is organised.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FormatKind {
    Undef,
    Any,
    Blocked,
    Wino,
    RnnPacked,
    Opaque,
    Sparse,
    Other(String),
}

impl FormatKind {
    pub fn parse(s: &str) -> Self {
        match s {
            "undef" | "" => FormatKind::Undef,
            "any" => FormatKind::Any,
            "blocked" => FormatKind::Blocked,
            "wino" => FormatKind::Wino,
            "rnn_packed" => FormatKind::RnnPacked,
            "opaque" => FormatKind::Opaque,
            "sparse" => FormatKind::Sparse,
            o => FormatKind::Other(o.to_string()),
        }
    }
    pub fn as_str(&self) -> &str {
        match self {
            FormatKind::Undef => "undef",
            FormatKind::Any => "any",
            FormatKind::Blocked => "blocked",
            FormatKind::Wino => "wino",
            FormatKind::RnnPacked => "rnn_packed",
            FormatKind::Opaque => "opaque",
            FormatKind::Sparse => "sparse",
            FormatKind::Other(s) => s,
        }
    }
}

/// One memory descriptor, e.g. `src:f32::blocked:aBcd16b::f0`.
///
/// Fields keep the library's spelling so that a descriptor can be printed back exactly (replay
/// and benchdnn export need the tag and strides verbatim).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct MemoryDesc {
    /// Argument name (`src`, `wei`, `diff_dst`, `src_layer`, …).
    pub arg: String,
    pub data_type: DataType,
    /// Property letters: `a` created with format `any`, `p` padded, `o` padded offsets,
    /// `0` non-zero offset0.
    pub properties: String,
    pub format_kind: FormatKind,
    /// Format tag (`abcd`, `aBcd16b`, …); for MKL-DNN 0.x the legacy format name (`nChw16c`).
    pub tag: String,
    /// Explicit strides (`512x1`), empty for dense tensors and before v3.2.
    pub strides: String,
    /// The extra-flags word and its sub-fields (`f0`, `f8:zpm1`, `f0_mask2`).
    pub flags: String,
}

impl MemoryDesc {
    /// A tensor that the primitive does not use (printed as `bia:undef::undef:::`).
    pub fn is_absent(&self) -> bool {
        self.data_type.is_undef() && matches!(self.format_kind, FormatKind::Undef)
    }

    /// True when the layout is a blocked one (channel blocking such as `aBcd16b`), which on
    /// CPUs usually means a reorder somewhere converts it from/to the framework's plain layout.
    pub fn is_blocked_layout(&self) -> bool {
        self.tag.bytes().any(|c| c.is_ascii_digit())
    }
}

/// Printed in the current (`arg:dt:…`, v3.6+) syntax, whatever the log's generation was; this
/// is the spelling oneDNN's `verbose_converter` uses in its breakdown keys.
impl fmt::Display for MemoryDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}:{}:{}:{}",
            self.arg,
            self.data_type,
            self.properties,
            self.format_kind.as_str(),
            self.tag,
            self.strides,
            self.flags
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_uses_current_syntax() {
        let md = MemoryDesc {
            arg: "src".into(),
            data_type: DataType::F32,
            properties: "".into(),
            format_kind: FormatKind::Blocked,
            tag: "aBcd16b".into(),
            strides: "".into(),
            flags: "f0".into(),
        };
        assert_eq!(md.to_string(), "src:f32::blocked:aBcd16b::f0");
        assert!(md.is_blocked_layout());
        assert!(!md.is_absent());
    }
}
