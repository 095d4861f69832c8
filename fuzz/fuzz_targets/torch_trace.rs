//! The PyTorch trace reader on arbitrary bytes: it must return (a trace or an error), never
//! panic, whatever the nesting, strings, escapes or truncation; and no operator it keeps may
//! end before it starts (NaN times aside). It does not join (that needs a log).
#![no_main]

use libfuzzer_sys::fuzz_target;
use profilednn_analysis::torch_trace::read_trace_from;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = read_trace_from(data, "fuzz") {
        for op in &t.ops {
            assert!(op.end >= op.start || op.end.is_nan() || op.start.is_nan());
        }
    }
});
