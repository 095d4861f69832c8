//! Replaying a log's primitives outside the program that ran them: the paper's projection
//! stage. Problems are identified by their benchdnn line (`profilednn-benchdnn`).

pub mod logged;
pub mod native;
pub mod what_if_run;
