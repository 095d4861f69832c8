//! `project --replay RESULTS.json`: any bytes through the results loader, then a projection of
//! a fixed log onto what loaded (with and without the machine profile).
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use profilednn_project::project::project;
use profilednn_replay::Replay;

const LOG: &[u8] = include_bytes!("../seeds/primitives.log.txt");

fuzz_target!(|data: &[u8]| {
    let Ok(replay) = serde_json::from_slice::<Replay>(data) else {
        return;
    };
    thread_local! {
        static PROFILE: profilednn_analysis::Profile = common::profile_of(LOG);
    }
    let machine = common::machine();
    PROFILE.with(|p| {
        for m in [None, Some(&machine)] {
            let pr = project(p, Some(&replay), m, None);
            let _ = serde_json::to_string(&pr).expect("projection serializes");
        }
    });
});
