//! Fixtures of the advice tests: the repository's `fixtures/` logs read into profiles.

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, Profile, ScanOptions};
use profilednn_verbose::LogInput;
use std::path::PathBuf;

pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel)
}

pub fn profile(rel: &str) -> Profile {
    let out = scan(
        LogInput::open(&fixture(rel)).unwrap(),
        &ScanOptions::default(),
    );
    Profile::from_scan(rel, out, &ProfileOptions::default())
}
