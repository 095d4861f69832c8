//! Why a problem of the log was not replayed: counted and listed, never fatal (one problem
//! oneDNN cannot rebuild must not stop the replay of the others).
//!
//! Typed so that the summary groups equal reasons by value and a caller can tell "oneDNN has
//! no implementation here" from "the replay does not know this kind yet" without reading text.
//! In a results file a reason is `{kind, message}` (`profilednn.replay.v2`; v1 files held the
//! message alone and are migrated on reading, [`SkipReason::from_v1`]). The messages are the
//! replay's output (and the "Not replayed" list): changing one changes what users see; the
//! kinds are what scripts test.

use serde::{Deserialize, Serialize};
use std::ffi::c_int;

/// What oneDNN answered when a descriptor or primitive could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    OutOfMemory,
    InvalidArguments,
    /// No implementation of this problem on this engine.
    Unimplemented,
    /// Any other `dnnl_status_t`.
    Other(c_int),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Unimplemented => {
                f.write_str("oneDNN has no implementation for this problem (unimplemented)")
            }
            Status::InvalidArguments => {
                f.write_str("oneDNN rejected the arguments (invalid_arguments)")
            }
            Status::OutOfMemory => f.write_str("out of memory"),
            Status::Other(s) => write!(f, "oneDNN status {s}"),
        }
    }
}

/// The words of [`SkipReason::NoBf16OnThisCpu`] that a results file read back is recognised by.
const NO_BF16_HERE: &str = "oneDNN has no bf16 implementation on this CPU";

/// Why one problem was not replayed.
/// In a results file it is its message (a JSON string).
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum SkipReason {
    // What oneDNN refused or does not know.
    /// A C API call of the rebuild failed; `step` names it (`convolution forward`, `post-ops`).
    #[error("{step}: {status}")]
    Refused { step: &'static str, status: Status },
    /// `Refused` with `unimplemented` for a problem with bf16 tensors where oneDNN's instruction
    /// set has no bf16 implementations (an AVX2-only CPU, or `ONEDNN_MAX_CPU_ISA` below
    /// `avx512_core`): the problem is fine, the machine is not.
    #[error("{step}: oneDNN has no bf16 implementation on this CPU (its instruction set here is {isa}; bf16 needs avx512_core or avx2_vnni_2): replay it on a machine that has them")]
    NoBf16OnThisCpu {
        step: &'static str,
        isa: &'static str,
    },
    #[error("data type '{0}' is not known to this oneDNN")]
    UnknownDataType(String),
    #[error("layout tag '{0}' is not known to this oneDNN")]
    UnknownTag(String),
    #[error("propagation '{0}' unknown to this oneDNN")]
    UnknownPropagation(String),
    #[error("algorithm '{0}' unknown to this oneDNN")]
    UnknownAlgorithm(String),
    #[error("post-op {0} unknown to this oneDNN")]
    UnknownPostOp(String),
    /// The library names no `forward_training` propagation (needed for backward hints).
    #[error("no forward_training")]
    NoForwardTraining,

    // What the log says that the replay cannot rebuild.
    /// The problem descriptor could not be read (the cost model's reason).
    #[error("{0}")]
    Problem(String),
    #[error("{0} descriptor not recognised")]
    Unrecognised(&'static str),
    /// A field the rebuild needs is missing from the descriptor (`mb`, `ic`, `algorithm`).
    #[error("no {0}")]
    Missing(&'static str),
    #[error("strides '{strides}' do not match {dims} dims")]
    StridesMismatch { strides: String, dims: usize },
    #[error("binary needs two sources")]
    BinaryNeedsTwoSources,
    #[error("reorder to a library-chosen layout cannot be rebuilt")]
    ReorderToAny,

    // What the replay does not do (yet).
    #[error("replay of '{0}' primitives is not implemented")]
    KindNotReplayed(String),
    #[error("{family} propagation '{prop}' not replayed")]
    PropagationNotReplayed { family: &'static str, prop: String },
    #[error("fpmath mode '{0}' not supported by the replay")]
    FpmathMode(String),
    #[error("quantization attributes (scales, zero points) are not replayed yet")]
    Quantization,
    #[error("post-op '{0}' is not replayed")]
    PostOpNotReplayed(String),
    /// Results files written before RMS normalization was replayed (oneDNN 3.9+) say so.
    #[error("RMS normalization (flags M) is not replayed")]
    RmsNorm,
    /// The problem uses what the loaded oneDNN predates: group normalization (3.3), scales and
    /// zero-points with a data type or groups (3.4), RMS normalization (3.9).
    #[error(
        "{what} needs oneDNN {version} or newer: point --dnnl-lib (or PROFILEDNN_DNNL_LIB) at one"
    )]
    NeedsOneDnn {
        what: &'static str,
        version: &'static str,
    },
    /// A scale or zero-point of an argument the replay cannot name to oneDNN.
    #[error("quantization of argument '{0}' is not replayed")]
    QuantArgument(String),

    // Running the rebuilt primitive.
    #[error("cannot allocate argument {arg} ({bytes} bytes)")]
    Allocation { arg: c_int, bytes: usize },
    #[error("cannot create the primitive (status {0})")]
    PrimitiveCreation(c_int),
    #[error("execution failed (status {0})")]
    Execution(c_int),

    // How the replay ran.
    /// The user stopped the replay (Ctrl-C) before this problem was timed.
    #[error("interrupted before it was replayed (Ctrl-C)")]
    Interrupted,
    /// Sequence replay: created, but no call of it was timed.
    #[error("no timed call")]
    NoTimedCall,
    /// Sequence replay: the problem is not in the iteration that was re-run.
    #[error("not in the steady-state iteration replayed")]
    NotInIteration,
    /// What-if replay: a problem of the rewritten iteration that has no outcome.
    #[error("not replayed")]
    NotReplayed,

    /// A reason read back from a results file, kept as its kind and text (the variants with
    /// fields are not parsed back: nothing downstream needs more than the kind and message).
    #[error("{message}")]
    Recorded { kind: String, message: String },
}

impl SkipReason {
    /// The reasons without fields, recognised again when a results file is read back.
    const UNIT: [SkipReason; 9] = [
        SkipReason::NoForwardTraining,
        SkipReason::BinaryNeedsTwoSources,
        SkipReason::ReorderToAny,
        SkipReason::Quantization,
        SkipReason::RmsNorm,
        SkipReason::Interrupted,
        SkipReason::NoTimedCall,
        SkipReason::NotInIteration,
        SkipReason::NotReplayed,
    ];

    /// oneDNN cannot run this bf16 problem on this CPU ([`SkipReason::NoBf16OnThisCpu`], also
    /// when read back from a results file).
    pub fn cpu_lacks_bf16(&self) -> bool {
        self.kind() == "no_bf16_on_this_cpu"
    }

    /// The reason's kind, as the results file names it (`skipped.kind`): what scripts and the
    /// tools reading a file back test, where the message is for people.
    pub fn kind(&self) -> &str {
        match self {
            SkipReason::Refused { .. } => "refused",
            SkipReason::NoBf16OnThisCpu { .. } => "no_bf16_on_this_cpu",
            SkipReason::UnknownDataType(_) => "unknown_data_type",
            SkipReason::UnknownTag(_) => "unknown_tag",
            SkipReason::UnknownPropagation(_) => "unknown_propagation",
            SkipReason::UnknownAlgorithm(_) => "unknown_algorithm",
            SkipReason::UnknownPostOp(_) => "unknown_post_op",
            SkipReason::NoForwardTraining => "no_forward_training",
            SkipReason::Problem(_) => "problem",
            SkipReason::Unrecognised(_) => "unrecognised",
            SkipReason::Missing(_) => "missing",
            SkipReason::StridesMismatch { .. } => "strides_mismatch",
            SkipReason::BinaryNeedsTwoSources => "binary_needs_two_sources",
            SkipReason::ReorderToAny => "reorder_to_any",
            SkipReason::KindNotReplayed(_) => "kind_not_replayed",
            SkipReason::PropagationNotReplayed { .. } => "propagation_not_replayed",
            SkipReason::FpmathMode(_) => "fpmath_mode",
            SkipReason::Quantization => "quantization",
            SkipReason::PostOpNotReplayed(_) => "post_op_not_replayed",
            SkipReason::RmsNorm => "rms_norm",
            SkipReason::NeedsOneDnn { .. } => "needs_onednn",
            SkipReason::QuantArgument(_) => "quant_argument",
            SkipReason::Allocation { .. } => "allocation",
            SkipReason::PrimitiveCreation(_) => "primitive_creation",
            SkipReason::Execution(_) => "execution",
            SkipReason::Interrupted => "interrupted",
            SkipReason::NoTimedCall => "no_timed_call",
            SkipReason::NotInIteration => "not_in_iteration",
            SkipReason::NotReplayed => "not_replayed",
            SkipReason::Recorded { kind, .. } => kind,
        }
    }

    /// A reason read back: a kind without fields is that variant again, any other is kept as
    /// its kind and message.
    pub fn recorded(kind: String, message: String) -> SkipReason {
        SkipReason::UNIT
            .into_iter()
            .find(|r| r.kind() == kind)
            .unwrap_or(SkipReason::Recorded { kind, message })
    }

    /// A `profilednn.replay.v1` reason, a bare message: its kind recovered from the text (the
    /// unit reasons by their message, the bf16 one by its words; else `unknown`). The one place
    /// a reason is recognised by its text: v2 files name the kind.
    pub fn from_v1(message: String) -> SkipReason {
        if let Some(r) = SkipReason::UNIT
            .into_iter()
            .find(|r| r.to_string() == message)
        {
            return r;
        }
        let kind = if message.contains(NO_BF16_HERE) {
            "no_bf16_on_this_cpu"
        } else {
            "unknown"
        };
        SkipReason::Recorded {
            kind: kind.into(),
            message,
        }
    }

    /// Equal reasons counted together, in the order of their messages (the order the summary
    /// has always listed them in).
    pub fn tally<'r>(
        reasons: impl IntoIterator<Item = &'r SkipReason>,
    ) -> Vec<(&'r SkipReason, usize)> {
        let mut counts: std::collections::HashMap<&SkipReason, usize> = Default::default();
        for r in reasons {
            *counts.entry(r).or_default() += 1;
        }
        let mut v: Vec<(&SkipReason, usize)> = counts.into_iter().collect();
        v.sort_by_cached_key(|(r, _)| r.to_string());
        v
    }
}

impl Serialize for SkipReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("SkipReason", 2)?;
        st.serialize_field("kind", self.kind())?;
        st.serialize_field("message", &self.to_string())?;
        st.end()
    }
}

/// A reason as files hold it: `{kind, message}` (v2), or a bare message (v1, migrated).
#[derive(Deserialize)]
#[serde(untagged)]
enum Wire {
    V2 { kind: String, message: String },
    V1(String),
}

/// Not derived: the derive would borrow the `&'static str` fields from the input.
impl<'de> Deserialize<'de> for SkipReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SkipReason, D::Error> {
        Ok(match Wire::deserialize(d)? {
            Wire::V2 { kind, message } => SkipReason::recorded(kind, message),
            Wire::V1(message) => SkipReason::from_v1(message),
        })
    }
}
