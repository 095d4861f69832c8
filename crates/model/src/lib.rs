//! What a oneDNN primitive *is*, independent of how a log spelled it.
//!
//! Every generation of the verbose format (MKL-DNN 0.x to oneDNN 3.x) is parsed by
//! `profilednn-verbose` into these types, so the layers above (aggregation, cost model, diff,
//! replay, advice) never see format versions. Names a newer library prints that this crate does
//! not know are kept verbatim in `Other` variants: an unknown kind or field is data, not an error.
#![forbid(unsafe_code)]

pub mod attr;
pub mod data_type;
pub mod engine;
pub mod kind;
pub mod memory;
pub mod primitive;
pub mod prop_kind;
pub mod quant_spec;

pub use attr::{Attribute, Attributes, PostOp, PostOpKind, QuantArg};
pub use data_type::DataType;
pub use engine::Engine;
pub use kind::PrimitiveKind;
pub use memory::{FormatKind, MemoryDesc};
pub use primitive::{AuxItem, Primitive};
pub use prop_kind::PropKind;
pub use quant_spec::QuantSpec;
