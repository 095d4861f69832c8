//! `--machine PROFILE.json`: any bytes through the load-and-validate path; a profile that loads
//! then gives rooflines for extreme work and traffic and the efficiency section of a report.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use profilednn_machine::MachineProfile;

const LOG: &[u8] = include_bytes!("../seeds/primitives.log.txt");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(m) = MachineProfile::from_json(text, "fuzz.json") else {
        return;
    };
    for precision in ["f32", "bf16", "f16", "int8", "f64", "nope"] {
        for (flops, bytes) in [
            (0, 0),
            (1, 0),
            (0, 1),
            (u64::MAX, 1),
            (1, u64::MAX),
            (u64::MAX, u64::MAX),
        ] {
            let _ = m.roofline(precision, flops, bytes);
        }
    }
    thread_local! {
        static PROFILE: profilednn_analysis::Profile = common::profile_of(LOG);
    }
    PROFILE.with(|p| common::reports(p, Some(m)));
});
