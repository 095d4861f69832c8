//! Renderers: they format [`profilednn_analysis::Summary`] and compute no figures of their own.
#![forbid(unsafe_code)]

pub mod advice;
pub mod csv_out;
pub mod diff_text;
pub mod html;
pub mod json;
pub mod machine;
pub mod projection;
pub mod ranks;
pub mod replay_text;
mod roofline;
pub mod terminal;
pub mod torch_view;
pub mod trace;
