//! The PyTorch trace reader on arbitrary bytes: it must return (a trace or an error), never
//! panic, whatever the nesting, strings, escapes or truncation; and no operator it keeps may
//! end before it starts (NaN times aside); the torch.compile readings (compiling iterations,
//! kernel names, the compiled-frames key) take whatever it kept; and the framework cost model
//! prices each op it kept (shapes, tensor lists, concrete inputs: absurd sizes, zero strides,
//! odd text) as a count or as uncosted, never a panic or a wrapped number. It does not join
//! (that needs a log).
#![no_main]

use libfuzzer_sys::fuzz_target;
use profilednn_cost::framework::{cost, OpCall};
use profilednn_torchtrace::{compiled, read_trace_from};

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = read_trace_from(data, "fuzz") {
        for op in &t.ops {
            assert!(op.end >= op.start || op.end.is_nan() || op.start.is_nan());
            // Inductor's kernel names: any name parses or is refused, without a panic.
            if let Some(k) = compiled::kernel(&op.name) {
                assert!(k.fused.iter().all(|f| !f.is_empty()));
            }
            let _ = cost(&OpCall {
                name: &op.name,
                dims: &op.dims,
                types: &op.types,
                lists: &op.lists,
                concrete: &op.concrete,
            });
        }
        for c in compiled::compiling_iterations(&t.ops) {
            assert!(c.compile_ms >= 0.0 || c.compile_ms.is_nan());
        }
    }
});
