//! Primitive attributes: post-ops, quantization parameters, math modes, scratchpad.

use crate::DataType;
use serde::Serialize;
use std::fmt;

/// A set of attributes in the order the log printed them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Attributes {
    pub items: Vec<Attribute>,
}

/// One attribute. Values keep the library's spelling (`0:f32`, `bf16:true`) so nothing is lost
/// in a round trip; typed accessors interpret them where analyses need it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "name", content = "value", rename_all = "kebab-case")]
pub enum Attribute {
    AccMode(String),
    Deterministic(String),
    Dropout(String),
    /// `attr-fpmath:MODE[:true]` (2.7+) and 2.6's `attr-fpmath_mode:MODE`.
    Fpmath {
        mode: String,
        apply_to_int: bool,
    },
    Oscale(String),
    PostOps(Vec<PostOp>),
    RoundingMode(String),
    Scales(Vec<QuantArg>),
    Scratchpad(String),
    ZeroPoints(Vec<QuantArg>),
    PrecomputedReductions(Vec<QuantArg>),
    /// `rnn_data_qparams:SCALE:SHIFT` (all versions).
    RnnDataQparams(String),
    /// An attribute this version does not know: name and value verbatim.
    Other {
        name: String,
        value: String,
    },
}

impl Attribute {
    /// The `attr-…` name oneDNN 3.x prints.
    pub fn name(&self) -> &str {
        match self {
            Attribute::AccMode(_) => "attr-acc-mode",
            Attribute::Deterministic(_) => "attr-deterministic",
            Attribute::Dropout(_) => "attr-dropout",
            Attribute::Fpmath { .. } => "attr-fpmath",
            Attribute::Oscale(_) => "attr-oscale",
            Attribute::PostOps(_) => "attr-post-ops",
            Attribute::RoundingMode(_) => "attr-rounding-mode",
            Attribute::Scales(_) => "attr-scales",
            Attribute::Scratchpad(_) => "attr-scratchpad",
            Attribute::ZeroPoints(_) => "attr-zero-points",
            Attribute::PrecomputedReductions(_) => "attr-precomputed-reductions",
            Attribute::RnnDataQparams(_) => "rnn_data_qparams",
            Attribute::Other { name, .. } => name,
        }
    }

    /// The position oneDNN's verbose_converter gives this attribute when it prints a set;
    /// unknown attributes go last.
    fn canonical_rank(&self) -> u8 {
        match self {
            Attribute::AccMode(_) => 0,
            Attribute::Deterministic(_) => 1,
            Attribute::Dropout(_) => 2,
            Attribute::Fpmath { .. } => 3,
            Attribute::Oscale(_) => 4,
            Attribute::PostOps(_) => 5,
            Attribute::RoundingMode(_) => 6,
            Attribute::Scales(_) => 7,
            Attribute::Scratchpad(_) => 8,
            Attribute::ZeroPoints(_) => 9,
            Attribute::PrecomputedReductions(_) => 10,
            Attribute::RnnDataQparams(_) => 11,
            Attribute::Other { .. } => 12,
        }
    }

    pub fn value_string(&self) -> String {
        fn join_q(v: &[QuantArg]) -> String {
            v.iter()
                .map(|q| format!("{}:{}", q.arg, q.spec))
                .collect::<Vec<_>>()
                .join("+")
        }
        match self {
            Attribute::AccMode(s)
            | Attribute::Deterministic(s)
            | Attribute::Dropout(s)
            | Attribute::Oscale(s)
            | Attribute::RoundingMode(s)
            | Attribute::Scratchpad(s)
            | Attribute::RnnDataQparams(s) => s.clone(),
            Attribute::Fpmath { mode, apply_to_int } => {
                if *apply_to_int {
                    format!("{mode}:true")
                } else {
                    mode.clone()
                }
            }
            Attribute::PostOps(ops) => ops
                .iter()
                .map(|p| p.raw.as_str())
                .collect::<Vec<_>>()
                .join("+"),
            Attribute::Scales(v)
            | Attribute::ZeroPoints(v)
            | Attribute::PrecomputedReductions(v) => join_q(v),
            Attribute::Other { value, .. } => value.clone(),
        }
    }
}

impl fmt::Display for Attribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.name(), self.value_string())
    }
}

impl Attributes {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn post_ops(&self) -> &[PostOp] {
        self.items
            .iter()
            .find_map(|a| match a {
                Attribute::PostOps(p) => Some(p.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }

    pub fn fpmath_mode(&self) -> Option<&str> {
        self.items.iter().find_map(|a| match a {
            Attribute::Fpmath { mode, .. } => Some(mode.as_str()),
            _ => None,
        })
    }

    /// The set in verbose_converter's order (`attr-post-ops:… attr-scratchpad:…`), so that
    /// groupings by attributes agree with oneDNN's own tool whatever order a version printed.
    pub fn canonical_string(&self) -> String {
        let mut items: Vec<&Attribute> = self.items.iter().collect();
        items.sort_by_key(|a| a.canonical_rank());
        items
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A per-argument quantization parameter: `wei:3:bf16:32x1` is arg `wei`, spec `3:bf16:32x1`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct QuantArg {
    pub arg: String,
    pub spec: String,
}

impl QuantArg {
    /// The mask (first item of the spec).
    pub fn mask(&self) -> Option<u64> {
        self.spec.split(':').next()?.parse().ok()
    }
    /// The data type (second item, 3.x syntax), when present.
    pub fn data_type(&self) -> Option<DataType> {
        self.spec.split(':').nth(1).and_then(DataType::parse)
    }
    /// Every field of the spec (groups, host scalar, mode included).
    pub fn parsed(&self) -> crate::QuantSpec {
        crate::QuantSpec::parse(&self.spec)
    }
}

/// One post-op of a fused primitive.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PostOp {
    pub kind: PostOpKind,
    /// Exactly as printed (`eltwise_relu:0.1`, `binary_add:f32:2`).
    pub raw: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PostOpKind {
    Sum,
    /// `eltwise_ALG[:ALPHA[:BETA[:SCALE]]]`; `alg` keeps the `eltwise_` prefix.
    Eltwise {
        alg: String,
    },
    /// `binary_ALG:DT:MASK…`.
    Binary {
        alg: String,
        data_type: Option<DataType>,
        mask: Option<u64>,
    },
    /// Fused depthwise convolution (`dw:k3s1p1` / 2.x `dw_k3s1p1`).
    Depthwise,
    Prelu,
    Other,
}

impl PostOp {
    pub fn parse(raw: &str) -> PostOp {
        let mut parts = raw.split(':');
        let head = parts.next().unwrap_or("");
        let kind = if head == "sum" {
            PostOpKind::Sum
        } else if head.starts_with("eltwise_") {
            PostOpKind::Eltwise {
                alg: head.to_string(),
            }
        } else if head.starts_with("binary_") {
            let data_type = parts.next().and_then(DataType::parse);
            let mask = parts.next().and_then(|m| m.parse().ok());
            PostOpKind::Binary {
                alg: head.to_string(),
                data_type,
                mask,
            }
        } else if head == "dw" || head.starts_with("dw_") {
            PostOpKind::Depthwise
        } else if head == "prelu" {
            PostOpKind::Prelu
        } else {
            PostOpKind::Other
        };
        PostOp {
            kind,
            raw: raw.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_order_follows_the_converter() {
        let a = Attributes {
            items: vec![
                Attribute::Scratchpad("user".into()),
                Attribute::PostOps(vec![PostOp::parse("eltwise_relu")]),
            ],
        };
        assert_eq!(
            a.canonical_string(),
            "attr-post-ops:eltwise_relu attr-scratchpad:user"
        );
    }

    #[test]
    fn post_op_kinds() {
        match PostOp::parse("binary_add:f32:2").kind {
            PostOpKind::Binary {
                alg,
                data_type,
                mask,
            } => {
                assert_eq!(alg, "binary_add");
                assert_eq!(data_type, Some(DataType::F32));
                assert_eq!(mask, Some(2));
            }
            k => panic!("{k:?}"),
        }
        assert_eq!(PostOp::parse("dw:k3s1p1:u8").kind, PostOpKind::Depthwise);
        assert_eq!(PostOp::parse("sum:0.5").kind, PostOpKind::Sum);
    }

    #[test]
    fn quant_arg_fields() {
        let q = QuantArg {
            arg: "wei".into(),
            spec: "3:bf16:32x1".into(),
        };
        assert_eq!(q.mask(), Some(3));
        assert_eq!(q.data_type(), Some(DataType::Bf16));
    }
}
