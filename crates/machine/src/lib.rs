//! What a machine can do, as a *machine profile*: compute peaks per arithmetic precision and
//! memory bandwidth, measured here by `profilednn peak` or written by hand from a spec sheet.
//!
//! ```
//! use profilednn_machine::{Bound, MachineProfile};
//! // A hand-written profile: 100 GFLOP/s f32, 10 GB/s. Its ridge is at 10 flop/byte.
//! let m: MachineProfile = serde_json::from_str(
//!     r#"{ "name": "example", "peak_gflops": { "f32": 100 }, "memory_gbps": 10 }"#,
//! )
//! .unwrap();
//! // 1 GFLOP over 1 GB (1 flop/byte): memory bound, at least 0.1 s.
//! let r = m.roofline("f32", 1_000_000_000, 1_000_000_000).unwrap();
//! assert_eq!(r.bound, Bound::Memory);
//! assert!((r.min_seconds - 0.1).abs() < 1e-12);
//! // bf16 without a bf16 peak: bounded by the f32 one, and the choice says why.
//! assert_eq!(m.peak_choice("bf16").unwrap().peak_precision, "f32");
//! ```
//!
//! The profile is the roofline's input: an analysis asks it for the ceiling of a primitive
//! with a given arithmetic intensity and precision ([`MachineProfile::roofline`]). Measuring
//! lives in [`measure`] (runtime-dispatched SIMD kernels) so that reading a profile never
//! depends on the machine it was measured on.

pub mod cache;
pub mod cpu;
pub mod measure;
pub mod placement;
mod profile;
mod roofline;
pub mod scaling;
pub mod unit;

pub use profile::{
    BandwidthPoint, ComputePeak, InvalidProfile, MachineProfile, ProfileError, SCHEMA, SCHEMA_V1,
};
pub use roofline::{Bound, NoPeak, PeakChoice, Roofline};
