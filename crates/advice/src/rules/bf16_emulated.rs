//! `bf16-without-bf16-units`: bf16 compute on a CPU without bf16 units (no AVX512_BF16, no AMX).
//! oneDNN still runs it (`jit_bf16:avx512_core`, `gemm:jit`, …) by converting through f32, which
//! is slower than plain f32: on such a CPU bf16 buys nothing but conversions.

use super::*;
use profilednn_cost::MathPrecision;

pub const ID: &str = "bf16-without-bf16-units";

/// Slowdown of bf16 over f32 measured on a CPU without bf16 units (oneDNN 3.2,
/// `fixtures/replay/train_v3.c`, `ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI`, 1 thread, per-primitive
/// medians of convolutions and inner products: 2.4–4.5× in the measurement, 3.5–5.6×
/// when the fixture was recorded). The gain uses the low end.
const MEASURED_SLOWDOWN: f64 = 2.4;

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let md = &ev.profile.metadata;
    if md.isa.is_empty() {
        return Err("the log has no ISA header line (not applicable)".into());
    }
    match md.native_bf16() {
        Some(true) => {
            return Err(format!(
                "the log's ISA has bf16 units ({})",
                md.isa.join("; ")
            ))
        }
        None => {
            return Err(format!(
                "the log's ISA is unknown ({}): measure it with `profilednn peak`",
                md.isa.join("; ")
            ))
        }
        Some(false) => {}
    }
    let total = total_ms(ev);
    let bf16_compute: Vec<&Entry> = exec(ev)
        .filter(|e| e.primitive.kind.is_compute_heavy())
        .filter(|e| matches!(&e.cost, Ok(c) if c.precision == MathPrecision::Bf16))
        .collect();
    // A kernel named for bf16 units ran (`brg_matmul:avx512_core_bf16`): the header's reading
    // notwithstanding, this CPU has them.
    if let Some(native) = bf16_compute.iter().find(|e| {
        profilednn_model::cpu_units::impl_units(&e.primitive.implementation.to_string())
            .is_some_and(|(_, u)| u.native_bf16())
    }) {
        return Err(format!(
            "bf16 compute ran on bf16 units ({})",
            native.primitive.implementation
        ));
    }
    let (time, share) = time_share(total, &bf16_compute);
    if bf16_compute.is_empty() || share < t.bf16_emulated_share {
        return Err(format!(
            "bf16 compute primitives take {} of oneDNN time (threshold {})",
            pct(share),
            pct(t.bf16_emulated_share)
        ));
    }
    // Implementations that ran the bf16 compute, heaviest first.
    let mut by_impl: Vec<(String, u64, f64)> = Vec::new();
    for e in &bf16_compute {
        let name = e.primitive.implementation.to_string();
        match by_impl.iter_mut().find(|(n, _, _)| *n == name) {
            Some(row) => {
                row.1 += e.calls;
                row.2 += e.time_ms();
            }
            None => by_impl.push((name, e.calls, e.time_ms())),
        }
    }
    by_impl.sort_by(|a, b| b.2.total_cmp(&a.2));
    let impls: Vec<Value> = by_impl
        .iter()
        .map(|(n, c, ms)| json!({"implementation": n, "calls": c, "time_ms": ms}))
        .collect();
    let names: Vec<&str> = by_impl.iter().map(|(n, _, _)| n.as_str()).collect();
    Ok(finding(
        ev,
        ID,
        format!(
            "bf16 convolutions/matmuls take {} of oneDNN time ({time:.1} ms) on a CPU without bf16 \
             units ({}): oneDNN converts through f32 ({})",
            pct(share),
            md.isa.join("; "),
            names.join(", ")
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("isa", json!(md.isa)),
            ("implementations", Value::Array(impls)),
            ("heaviest", examples(bf16_compute.iter().copied(), 5)),
        ]),
        Some(time * (1.0 - 1.0 / MEASURED_SLOWDOWN)),
        "bf16 compute time less the same work in f32: bf16 measured 2.4x or more slower than f32 \
         on a CPU without bf16 units (oneDNN 3.2, AVX-512 with DL Boost)",
        "Run in f32 on this CPU: drop `torch.autocast(\"cpu\", dtype=torch.bfloat16)` (or \
         `.to(torch.bfloat16)`) here. bf16 can only pay where the CPU has bf16 units (AVX512-BF16: \
         Cooper Lake, Zen 4 and later; AVX10.1; AMX: Sapphire Rapids and later), and even there \
         only where its measured bf16 rate beats f32 (`profilednn peak`, `advise --project`).",
    ))
}
