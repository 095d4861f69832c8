//! Any bytes through the whole parse path: line classification, primitive parsing of what
//! looks like a primitive and its cost, and a chunked tally + profile of the input as a log
//! (which costs every distinct primitive). The report of a profile is `structured_line`'s job:
//! here speed finds more.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
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
                if let Ok(p) = parse_primitive(text, syntax, time_ps.is_some()) {
                    let _ = profilednn_cost::cost(&p);
                    let _ = profilednn_cost::data_dims(&p);
                }
                let graph = Syntax {
                    v1_descriptors: false,
                    graph: true,
                };
                if let Ok(p) = parse_primitive(text, graph, time_ps.is_some()) {
                    let _ = profilednn_cost::cost(&p);
                }
            }
        }
    }
    let profile = common::profile_of(data);
    for e in &profile.entries {
        if let Ok(c) = &e.cost {
            let _ = c.intensity();
        }
    }
});
