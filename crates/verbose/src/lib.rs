//! Log bytes → typed verbose events, for every generation of the format.
//!
//! ```
//! use profilednn_verbose::{classify, parse_primitive, Line, Syntax};
//! let line = b"onednn_verbose,v1,primitive,exec,cpu,matmul,brg:avx512_core,undef,\
//!     src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,64x256:256x128,0.25";
//! let Line::Primitive { head, body, time_ps } = classify(line) else { panic!("not an exec line") };
//! assert_eq!(time_ps, Some(250_000_000)); // 0.25 ms, kept as integer picoseconds
//! let syntax = Syntax { v1_descriptors: head.version >= 1, graph: false };
//! let p = parse_primitive(std::str::from_utf8(body).unwrap(), syntax, true).unwrap();
//! assert_eq!((p.kind.to_string().as_str(), p.problem.as_str()), ("matmul", "64x256:256x128"));
//! ```
//!
//! The parser is split in two speeds, because a training log repeats the same few hundred
//! primitives millions of times:
//!
//! * [`line::classify`] is the per-line fast path: it recognises the marker and the leading
//!   tokens (`v1`, timestamp, component), the operation, and for `exec`/`create` lines splits off
//!   the time. It allocates nothing and never fails hard — bad lines become a
//!   [`line::SkipReason`] or a [`line::Line::Malformed`] with what was expected.
//! * [`primitive::parse_primitive`] turns the text of one *unique* primitive (everything
//!   between the operation and the time) into a typed [`profilednn_model::Primitive`]. Callers
//!   deduplicate by text first and parse each distinct text once.
//!
//! [`input`] opens files (plain, gzip, stdin) and cuts them into newline-aligned chunks so that
//! callers can scan in parallel with bounded memory.

pub mod attr;
pub mod bytescan;
pub mod demux;
pub mod env;
pub mod file_kind;
pub mod gzip;
pub mod header;
pub mod input;
pub mod launcher;
pub mod launcher_join;
pub mod line;
pub mod markers;
pub mod memory;
pub mod primitive;
pub mod rotated;
pub mod spdlog;
pub mod time;

pub use file_kind::FileKind;
pub use header::{parse_info, InfoLine};
pub use input::{LogInput, OpenError};
pub use line::{classify, Component, Diagnostic, Line, Marker, SkipReason, VerboseLine};
pub use memory::MemoryDescError;
pub use primitive::{parse_primitive, PrimitiveError, Syntax};
pub use time::{parse_ms_to_ps, PS_PER_MS};
