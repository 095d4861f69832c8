//! Shared by the fuzz targets: a log's bytes into a profile the way the tool builds one, and
//! every report of a profile.
#![allow(dead_code)]

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{summarize, Profile, SummaryOptions, Tally};
use profilednn_machine::MachineProfile;

/// The spec-sheet machine profile of the repository's fixtures.
pub fn machine() -> MachineProfile {
    MachineProfile::from_json(
        include_str!("../../fixtures/machine/xeon-8480-spec.json"),
        "xeon-8480-spec.json",
    )
    .expect("fixture machine profile")
}

/// A tally of `data` in two chunks cut at a newline near the middle (as the parallel scan
/// does), then the profile.
pub fn profile_of(data: &[u8]) -> Profile {
    let mut t = Tally::default();
    let mid = data.len() / 2;
    let cut = data[mid..]
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| mid + p + 1)
        .unwrap_or(data.len());
    t.consume_chunk(0, &data[..cut], cut == data.len());
    if cut < data.len() {
        t.consume_chunk(1, &data[cut..], true);
    }
    Profile::from_tally("fuzz".into(), &t, &ProfileOptions::default())
}

/// The summary with a roofline, rendered as JSON and as the terminal table.
pub fn reports(profile: &Profile, machine: Option<MachineProfile>) {
    for e in &profile.entries {
        if let Ok(c) = &e.cost {
            let _ = c.intensity();
        }
    }
    let s = summarize(
        std::slice::from_ref(profile),
        &SummaryOptions {
            machine,
            ..Default::default()
        },
    );
    let json = profilednn_report::json::render(&s);
    assert!(
        serde_json::from_str::<serde_json::Value>(&json).is_ok(),
        "report JSON parses"
    );
    let _ = profilednn_report::terminal::render(
        &s,
        &profilednn_report::terminal::TerminalOptions {
            rows: 10,
            width: Some(160),
            columns: Default::default(),
        },
    );
}
