//! `benchdnn --ingest RESULTS`: any text through benchdnn's performance-output parser, and the
//! JSON the command prints of what it read.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (records, errors) = profilednn_benchdnn::ingest::parse_perf(&text);
    for e in &errors {
        let _ = e.to_string();
    }
    let _ = serde_json::to_string(&records).expect("records serialize");
});
