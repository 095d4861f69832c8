//! `project --to TARGET.json`: any bytes through the target profile's reader (schema, missing
//! fields, spec sheet or measured); a profile that reads then picks a roof for every precision
//! and oneDNN implementation name, and the unit of arbitrary implementation names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profilednn_project::target::{parse, roofs::Roofs};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for line in text.lines().take(64) {
        for precision in ["f32", "bf16", "f16", "int8", "f64"] {
            let _ = profilednn_machine::unit::of_implementation(line, precision);
        }
    }
    let Ok(t) = parse(text, "fuzz.json") else {
        return;
    };
    for threads in [1, 2, 4096] {
        let r = Roofs::at(&t.profile, threads);
        for precision in ["f32", "bf16", "f16", "int8", "f64"] {
            let _ = r.target(precision);
            for imp in ["brg_conv_fwd:avx512_core_amx", "jit:avx2", "ref:any", ""] {
                let _ = t.profile.peak_choice_for(precision, Some(imp));
            }
        }
        let _ = r.single_core_f32();
    }
});
