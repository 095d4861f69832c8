//! `report --torch-trace` with Inductor's output code beside the trace: any text through the
//! output-code reader, and the JSON of what it costed.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let code = profilednn_torchtrace::inductor_code::parse(&text);
    let _ = serde_json::to_string(&code).expect("output code serializes");
});
