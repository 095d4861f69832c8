//! What a oneDNN primitive *is*, independent of how a log spelled it.
//!
//! ```
//! use profilednn_model::{primitive::is_reference_impl, DataType};
//! // Data types by the names every generation printed; sizes for traffic estimates.
//! assert_eq!(DataType::parse("bf16").and_then(|t| t.bits()), Some(16));
//! assert_eq!(DataType::parse("f8_e5m2").and_then(|t| t.bits()), Some(8));
//! // oneDNN's slow fallbacks, recognised by their implementation names.
//! assert!(is_reference_impl("ref:any"));
//! assert!(!is_reference_impl("brg_conv_fwd:avx512_core"));
//! ```
//!
//! Every generation of the verbose format (MKL-DNN 0.x to oneDNN 3.x) is parsed by
//! `profilednn-verbose` into these types, so the layers above (aggregation, cost model, diff,
//! replay, advice) never see format versions. Names a newer library prints that this crate does
//! not know are kept verbatim in `Other` variants: an unknown kind or field is data, not an error.
#![forbid(unsafe_code)]

pub mod attr;
pub mod cpu_units;
pub mod data_type;
pub mod engine;
pub mod kind;
pub mod layout;
pub mod memory;
pub mod primitive;
pub mod prop_kind;
pub mod quant_spec;

pub use attr::{Attribute, Attributes, PostOp, PostOpKind, QuantArg};
pub use data_type::DataType;
pub use engine::Engine;
pub use kind::PrimitiveKind;
pub use layout::ActivationLayout;
pub use memory::{FormatKind, MemoryDesc};
pub use primitive::{AuxItem, Primitive};
pub use prop_kind::PropKind;
pub use quant_spec::QuantSpec;
