//! Primitive kinds as oneDNN prints them.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The kind of a primitive (`convolution`, `reorder`, …).
///
/// Transitional kinds of 1.x–2.x (`pooling_v2`, `softmax_v2`, `logsoftmax`) are kept distinct
/// because that is what the log says; [`PrimitiveKind::family`] maps them to their modern kind
/// for analyses that should not care.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PrimitiveKind {
    Reorder,
    Shuffle,
    Concat,
    Sum,
    Convolution,
    Deconvolution,
    Eltwise,
    Lrn,
    BatchNormalization,
    InnerProduct,
    Rnn,
    Gemm,
    Binary,
    Matmul,
    Resampling,
    Pooling,
    Reduction,
    Prelu,
    Softmax,
    LayerNormalization,
    GroupNormalization,
    Sdpa,
    GatedMlp,
    ZeroPad,
    PoolingV2,
    SoftmaxV2,
    LogSoftmax,
    /// A graph-API partition execution (component `graph`).
    GraphPartition,
    /// A kind this version of ProfileDNN does not know, verbatim.
    Other(String),
}

const NAMES: &[(&str, PrimitiveKind)] = &[
    ("reorder", PrimitiveKind::Reorder),
    ("shuffle", PrimitiveKind::Shuffle),
    ("concat", PrimitiveKind::Concat),
    ("sum", PrimitiveKind::Sum),
    ("convolution", PrimitiveKind::Convolution),
    ("deconvolution", PrimitiveKind::Deconvolution),
    ("eltwise", PrimitiveKind::Eltwise),
    ("lrn", PrimitiveKind::Lrn),
    ("batch_normalization", PrimitiveKind::BatchNormalization),
    ("inner_product", PrimitiveKind::InnerProduct),
    ("rnn", PrimitiveKind::Rnn),
    ("gemm", PrimitiveKind::Gemm),
    ("binary", PrimitiveKind::Binary),
    ("matmul", PrimitiveKind::Matmul),
    ("resampling", PrimitiveKind::Resampling),
    ("pooling", PrimitiveKind::Pooling),
    ("reduction", PrimitiveKind::Reduction),
    ("prelu", PrimitiveKind::Prelu),
    ("softmax", PrimitiveKind::Softmax),
    ("layer_normalization", PrimitiveKind::LayerNormalization),
    ("group_normalization", PrimitiveKind::GroupNormalization),
    ("sdpa", PrimitiveKind::Sdpa),
    ("gated_mlp", PrimitiveKind::GatedMlp),
    ("zero_pad", PrimitiveKind::ZeroPad),
    ("pooling_v2", PrimitiveKind::PoolingV2),
    ("softmax_v2", PrimitiveKind::SoftmaxV2),
    ("logsoftmax", PrimitiveKind::LogSoftmax),
    ("graph_partition", PrimitiveKind::GraphPartition),
];

impl PrimitiveKind {
    pub fn parse(s: &str) -> Self {
        NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, k)| k.clone())
            .unwrap_or_else(|| PrimitiveKind::Other(s.to_string()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            PrimitiveKind::Other(s) => s,
            k => NAMES
                .iter()
                .find(|(_, v)| v == k)
                .map(|(n, _)| *n)
                .unwrap_or("?"),
        }
    }

    /// The modern kind a transitional 1.x–2.x kind became.
    pub fn family(&self) -> PrimitiveKind {
        match self {
            PrimitiveKind::PoolingV2 => PrimitiveKind::Pooling,
            PrimitiveKind::SoftmaxV2 | PrimitiveKind::LogSoftmax => PrimitiveKind::Softmax,
            k => k.clone(),
        }
    }

    /// Kinds whose work is dominated by arithmetic (where bf16/AMX and roofline compute
    /// bounds matter), as opposed to data movement.
    pub fn is_compute_heavy(&self) -> bool {
        matches!(
            self.family(),
            PrimitiveKind::Convolution
                | PrimitiveKind::Deconvolution
                | PrimitiveKind::InnerProduct
                | PrimitiveKind::Matmul
                | PrimitiveKind::Rnn
                | PrimitiveKind::Gemm
                | PrimitiveKind::Sdpa
                | PrimitiveKind::GatedMlp
        )
    }
}

impl fmt::Display for PrimitiveKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PrimitiveKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// As the log names it: a kind this version does not know reads back as [`PrimitiveKind::Other`].
impl<'de> Deserialize<'de> for PrimitiveKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(PrimitiveKind::parse(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_name_round_trips() {
        for (name, kind) in NAMES {
            assert_eq!(&PrimitiveKind::parse(name), kind);
            assert_eq!(kind.as_str(), *name);
        }
    }

    #[test]
    fn unknown_kind_is_preserved() {
        let k = PrimitiveKind::parse("fancy_new_thing");
        assert_eq!(k, PrimitiveKind::Other("fancy_new_thing".into()));
        assert_eq!(k.as_str(), "fancy_new_thing");
    }

    #[test]
    fn transitional_kinds_map_to_their_family() {
        assert_eq!(PrimitiveKind::PoolingV2.family(), PrimitiveKind::Pooling);
        assert_eq!(PrimitiveKind::SoftmaxV2.family(), PrimitiveKind::Softmax);
        assert!(PrimitiveKind::Matmul.is_compute_heavy());
        assert!(!PrimitiveKind::Reorder.is_compute_heavy());
    }
}
