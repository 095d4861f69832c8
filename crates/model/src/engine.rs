//! The engine a primitive ran on.

use serde::{Serialize, Serializer};
use std::fmt;

/// `cpu`, `gpu`, `cpu:1`, `cpu2gpu`, … kept verbatim; MKL-DNN 0.x printed no engine and
/// only ran on CPUs, so its lines get `cpu`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Engine(pub String);

impl Engine {
    pub fn cpu() -> Self {
        Engine("cpu".into())
    }
    pub fn is_gpu(&self) -> bool {
        self.0.starts_with("gpu") || self.0.ends_with("gpu")
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Engine {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}
