//! Any bytes through the whole parse path: line classification, primitive parsing of what
//! looks like a primitive, and a chunked tally + profile of the input as a log.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{Profile, Tally};
use profilednn_verbose::{classify, parse_primitive, Line, Syntax};

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        if let Line::Primitive {
            head,
            body,
            time_ps,
        } = classify(line)
        {
            if let Ok(text) = std::str::from_utf8(body) {
                let syntax = Syntax {
                    v1_descriptors: head.version >= 1,
                    graph: false,
                };
                let _ = parse_primitive(text, syntax, time_ps.is_some());
                let _ = parse_primitive(
                    text,
                    Syntax {
                        v1_descriptors: false,
                        graph: true,
                    },
                    time_ps.is_some(),
                );
            }
        }
    }
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
    let _ = Profile::from_tally("fuzz".into(), &t, &ProfileOptions::default());
});
