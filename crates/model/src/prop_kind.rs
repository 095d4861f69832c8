//! Propagation kinds: which pass of training a primitive belongs to.

use serde::{Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PropKind {
    /// Primitives without a direction (reorder, sum, binary, matmul, …).
    Undef,
    ForwardTraining,
    ForwardInference,
    /// Backward data and weights in one primitive (batch-norm, RNN, …).
    Backward,
    BackwardData,
    BackwardWeights,
    BackwardBias,
    Other(String),
}

impl PropKind {
    pub fn parse(s: &str) -> Self {
        match s {
            "undef" => PropKind::Undef,
            // `forward` is an alias oneDNN never prints, but hand-written logs may use it.
            "forward_training" | "forward" => PropKind::ForwardTraining,
            "forward_inference" | "forward_scoring" => PropKind::ForwardInference,
            "backward" => PropKind::Backward,
            "backward_data" => PropKind::BackwardData,
            "backward_weights" => PropKind::BackwardWeights,
            "backward_bias" => PropKind::BackwardBias,
            other => PropKind::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            PropKind::Undef => "undef",
            PropKind::ForwardTraining => "forward_training",
            PropKind::ForwardInference => "forward_inference",
            PropKind::Backward => "backward",
            PropKind::BackwardData => "backward_data",
            PropKind::BackwardWeights => "backward_weights",
            PropKind::BackwardBias => "backward_bias",
            PropKind::Other(s) => s,
        }
    }

    pub fn is_forward(&self) -> bool {
        matches!(self, PropKind::ForwardTraining | PropKind::ForwardInference)
    }

    pub fn is_backward(&self) -> bool {
        matches!(
            self,
            PropKind::Backward
                | PropKind::BackwardData
                | PropKind::BackwardWeights
                | PropKind::BackwardBias
        )
    }
}

impl fmt::Display for PropKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PropKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        assert!(PropKind::parse("forward_inference").is_forward());
        assert!(PropKind::parse("backward_weights").is_backward());
        assert!(!PropKind::parse("undef").is_backward());
        assert_eq!(PropKind::parse("sideways").as_str(), "sideways");
    }
}
