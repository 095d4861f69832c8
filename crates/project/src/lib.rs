//! The method's project step on replay results: a log's training time projected onto the
//! machine that replayed it (or onto a machine profile's roofline), as logged or rewritten by a
//! what-if (`project`, with `project::what_if` its child), the ranks × threads plan (`plan`),
//! and the projections' figures for the advice rules (`advice`). Everything here reads
//! results; the replay itself runs in `profilednn-dnnl`.

pub mod advice;
pub mod machine_file;
pub mod plan;
pub mod project;
pub mod target;
pub mod wanted_replays;
