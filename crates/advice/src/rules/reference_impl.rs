//! `reference-implementation`: oneDNN fell back to a reference (slow) kernel.

use super::*;

pub const ID: &str = "reference-implementation";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let total = total_ms(ev);
    let refs: Vec<&Entry> = exec(ev)
        .filter(|e| e.primitive.is_reference_impl())
        .collect();
    let (time, share) = time_share(total, &refs);
    if refs.is_empty() || share < t.reference_share {
        return Err(format!(
            "reference implementations take {} of oneDNN time ({} primitives; threshold {})",
            pct(share),
            refs.len(),
            pct(t.reference_share)
        ));
    }
    Ok(finding(
        ev,
        ID,
        format!(
            "{} primitive(s) run reference (slow fallback) kernels: {} of oneDNN time ({time:.1} ms)",
            refs.len(),
            pct(share)
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("primitives", json!(refs.len())),
            ("heaviest", examples(refs.iter().copied(), 5)),
        ]),
        Some(0.9 * time),
        "90% of their time: optimized kernels are typically 10x or more faster than reference ones",
        "A reference kernel means no optimized one accepted this problem: usually an unusual data \
         type (f64, mixed int8 types), an odd memory layout (non-contiguous or exotic strides), or \
         an attribute combination. Make inputs contiguous / channels-last, use f32 or bf16, or \
         update oneDNN; `ONEDNN_VERBOSE=dispatch` prints why each optimized kernel declined.",
    ))
}
