//! What a machine can do, as a *machine profile*: compute peaks per arithmetic precision and
//! memory bandwidth, measured here by `profilednn peak` or written by hand from a spec sheet.
//!
//! The profile is the roofline's input: an analysis asks it for the ceiling of a primitive
//! with a given arithmetic intensity and precision ([`MachineProfile::roofline`]). Measuring
//! lives in [`measure`] (runtime-dispatched SIMD kernels) so that reading a profile never
//! depends on the machine it was measured on.

pub mod cpu;
pub mod measure;
mod profile;
mod roofline;

pub use profile::{
    BandwidthPoint, ComputePeak, InvalidProfile, MachineProfile, ProfileError, SCHEMA,
};
pub use roofline::{Bound, NoPeak, PeakChoice, Roofline};
