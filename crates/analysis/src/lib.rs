//! Profiles built from verbose logs: where the time goes.
//!
//! [`scan()`] reads a log (in parallel for files, streamed for gzip and stdin) into a
//! [`tally::Tally`] — per-distinct-line-text counters, so memory depends on the number of
//! distinct primitives, not on the log's size. [`Profile::from_tally`] then parses each distinct
//! primitive once into the typed model, and [`breakdown()`] groups it by any keys.
//!
//! Nothing here prints: renderers live in `profilednn-report`. Logs come in as opened
//! [`profilednn_verbose::LogInput`]s; the one file opened by name here is the PyTorch trace
//! ([`torch_trace::read_trace`]), because its reader decides how to stream it.

#![forbid(unsafe_code)]

pub mod breakdown;
pub mod diff;
pub mod efficiency;
pub mod events;
pub mod iterations;
pub mod metadata;
pub mod profile;
pub mod ranks;
pub mod scan;
pub mod summary;
pub mod tally;
pub mod timeline;
pub mod torch_compare;
pub mod torch_trace;

pub use breakdown::{breakdown, Breakdown, BreakdownRow, GroupKey, UnknownGroupKey, Work};
pub use efficiency::{efficiency, Efficiency};
pub use iterations::{IterationMethod, Iterations};
pub use metadata::RunMetadata;
pub use profile::{Entry, EventKind, LineCounts, MalformedLine, Profile};
pub use scan::{scan, ScanOptions, ScanOutput};
pub use summary::{summarize, summarize_merged, Summary, SummaryOptions};
pub use tally::Tally;
