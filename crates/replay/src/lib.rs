//! Replaying a log's primitives outside the program that ran them: the paper's projection
//! stage. `benchdnn` writes benchdnn batch files equal to what oneDNN's own `verbose_converter`
//! generates (problem by problem) and reads benchdnn's performance output back.

pub mod batch;
pub mod benchdnn;
pub mod ingest;
pub mod native;
pub mod plan;
pub mod project;
pub mod project_what_if;
pub mod transform;
pub mod what_if_run;
