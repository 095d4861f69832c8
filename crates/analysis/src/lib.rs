//! Profiles built from verbose logs: where the time goes.
//!
//! ```
//! // A three-line log: two calls of a convolution (3 ms and 1 ms), one of a ReLU.
//! const LOG: &str = "\
//! onednn_verbose,v1,primitive,exec,cpu,convolution,ref:any,forward_training,\
//! src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,\
//! ,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,3.0
//! onednn_verbose,v1,primitive,exec,cpu,convolution,ref:any,forward_training,\
//! src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,\
//! ,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,1.0
//! onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_training,\
//! data:f32::blocked:abcd::f0 diff:undef::undef:::,,alg:eltwise_relu alpha:0 beta:0,2x16x8x8,0.5
//! ";
//! let input = profilednn_verbose::LogInput::Stream {
//!     path: "train.log".into(),
//!     reader: Box::new(std::io::Cursor::new(LOG)),
//!     compressed_len: None,
//! };
//! let scanned = profilednn_analysis::scan(input, &profilednn_analysis::ScanOptions::default());
//! let profile = profilednn_analysis::Profile::from_scan("train.log", scanned, &Default::default());
//! let conv = profile.entries.iter().find(|e| e.primitive.kind.to_string() == "convolution").unwrap();
//! assert_eq!(conv.calls, 2);
//! assert!((conv.time_ms() - 4.0).abs() < 1e-9);
//! let total: f64 = profile.entries.iter().map(|e| e.time_ms()).sum();
//! assert!((total - 4.5).abs() < 1e-9);
//! ```
//!
//! [`scan()`] reads a log (in parallel for files, streamed for gzip and stdin) into a
//! [`tally::Tally`] — per-distinct-line-text counters, so memory depends on the number of
//! distinct primitives, not on the log's size. [`Profile::from_tally`] then parses each distinct
//! primitive once into the typed model, and [`breakdown()`] groups it by any keys.
//!
//! Nothing here prints: renderers live in `profilednn-report`. Logs come in as opened
//! [`profilednn_verbose::LogInput`]s. The PyTorch trace is read by `profilednn-torchtrace`
//! (which opens it by name, because its reader decides how to stream it); [`torch_join`]
//! joins it with a log.

#![forbid(unsafe_code)]

pub mod breakdown;
pub mod compile_cost;
pub mod diff;
pub mod durations;
pub mod efficiency;
pub mod events;
pub mod fused_kernels;
pub mod iterations;
pub mod key_table;
pub mod load;
pub mod log_machine;
pub mod metadata;
pub mod moved_op;
pub mod profile;
pub mod ranks;
pub mod scale;
pub mod scan;
pub mod steady_calls;
pub mod summary;
pub mod tally;
pub mod timeline;
pub mod torch_compare;
pub mod torch_join;

pub use breakdown::{breakdown, Breakdown, BreakdownRow, GroupKey, UnknownGroupKey, Work};
pub use efficiency::{efficiency, Efficiency};
pub use iterations::{IterationMethod, Iterations};
pub use metadata::RunMetadata;
pub use profile::{Entry, EventKind, LineCounts, MalformedLine, Profile};
pub use scan::{scan, ScanOptions, ScanOutput};
pub use summary::{summarize, summarize_merged, Summary, SummaryOptions};
pub use tally::Tally;
