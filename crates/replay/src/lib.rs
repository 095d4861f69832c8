//! Replaying a log's primitives outside the program that ran them: the paper's projection
//! stage. `benchdnn` writes benchdnn batch files equal to what oneDNN's own `verbose_converter`
//! generates (problem by problem) and reads benchdnn's performance output back.
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
//! let (driver, line) = profilednn_replay::benchdnn::line(&p).unwrap();
//! assert_eq!(driver, "matmul");
//! assert!(line.ends_with("64x256:256x128"), "{line}");
//! ```

pub mod batch;
pub mod benchdnn;
pub mod ingest;
pub mod logged;
pub mod native;
pub mod plan;
pub mod project;
pub mod project_what_if;
pub mod transform;
pub mod what_if_run;
