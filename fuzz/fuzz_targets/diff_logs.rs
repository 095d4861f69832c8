//! `diff BEFORE AFTER` of two arbitrary logs: the input is split at its first NUL byte (or in
//! the middle when there is none); both profiles are diffed with every matching option and
//! rendered as text, JSON and HTML.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use profilednn_analysis::diff::{diff, DiffOptions};

fuzz_target!(|data: &[u8]| {
    let (a, b) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => data.split_at(data.len() / 2),
    };
    let (before, after) = (common::profile_of(a), common::profile_of(b));
    for (ignore_batch, ignore_dtype) in [(false, false), (true, true)] {
        let d = diff(
            &before,
            &after,
            &DiffOptions {
                ignore_batch,
                ignore_dtype,
                top: 5,
            },
        );
        let _ = profilednn_report::diff_text::render(
            &d,
            &profilednn_report::terminal::TerminalOptions {
                rows: 5,
                width: Some(160),
                columns: Default::default(),
            },
        );
        let _ = serde_json::to_string(&d).expect("diff serializes");
        if !ignore_batch {
            let _ = profilednn_report::html::diff_page(&d, None);
        }
    }
});
