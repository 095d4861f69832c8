//! Fixtures of the advice tests: the repository's `fixtures/` logs read into profiles.

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, Profile, ScanOptions};
use profilednn_verbose::LogInput;
use std::io::Read;
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

/// A fixture's text (gzip decompressed).
#[allow(dead_code)] // not every test file reads texts
pub fn text(rel: &str) -> String {
    let mut s = String::new();
    let f = std::fs::File::open(fixture(rel)).unwrap();
    if rel.ends_with(".gz") {
        flate2::read::MultiGzDecoder::new(f)
            .read_to_string(&mut s)
            .unwrap();
    } else {
        std::io::BufReader::new(f).read_to_string(&mut s).unwrap();
    }
    s
}
