//! Renderers of [`profilednn_analysis::Summary`], of `profilednn_replay`'s replay results and
//! of `profilednn_project`'s projections. They format what those crates computed: the only
//! arithmetic here is the presentation's (shares, ratios, the sum of a column).
//!
//! ```
//! // The terminal report of a one-line log.
//! let mut tally = profilednn_analysis::Tally::default();
//! let line = "onednn_verbose,v1,primitive,exec,cpu,matmul,brg:avx512_core,undef,\
//!     src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,64x256:256x128,0.25\n";
//! tally.consume_chunk(0, line.as_bytes(), true);
//! let profile = profilednn_analysis::Profile::from_tally("t.log".into(), &tally, &Default::default());
//! let summary = profilednn_analysis::summarize(&[profile], &Default::default());
//! let options = profilednn_report::terminal::TerminalOptions {
//!     rows: 15,
//!     width: Some(100),
//!     columns: Default::default(),
//! };
//! let text = profilednn_report::terminal::render(&summary, &options);
//! assert!(text.contains("matmul"), "{text}");
//! ```
#![forbid(unsafe_code)]

pub mod advice;
pub mod csv_out;
pub mod diff_doc;
pub mod diff_text;
pub mod html;
pub mod json;
pub mod machine;
pub mod machine_projection;
pub mod plan_table;
pub mod projection;
pub mod ranks;
pub mod replay_text;
pub mod report_doc;
pub mod step_text;
pub mod terminal;
pub mod torch_view;
pub mod trace;
