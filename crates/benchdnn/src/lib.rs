//! benchdnn, oneDNN's own benchmark, as ProfileDNN speaks it. A primitive's benchdnn line is
//! written as oneDNN's `verbose_converter` writes it, and it is also the identity of a problem
//! ([`problem_key`]) that logs, replays and projections are matched by. `batch` writes a log's
//! batch files; `ingest` reads benchdnn's performance output back. Nothing here needs oneDNN.
//!
//! ```
//! use profilednn_verbose::{parse_primitive, Syntax};
//! // A logged matmul, as the benchdnn line that re-creates it (no oneDNN needed for this).
//! let p = parse_primitive(
//!     "cpu,matmul,brg:avx512_core,undef,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 \
//!      dst:f32::blocked:ab::f0,,,64x256:256x128",
//!     Syntax { v1_descriptors: true, graph: false },
//!     false,
//! )
//! .unwrap();
//! let (driver, line) = profilednn_benchdnn::line(&p).unwrap();
//! assert_eq!(driver, "matmul");
//! assert!(line.ends_with("64x256:256x128"), "{line}");
//! ```

pub mod batch;
pub mod ingest;
mod line;
mod problem;

pub use line::{driver, line};
pub use problem::problem_key;
