//! `reorder-overhead`: layout (and data-type) churn.

use super::*;
use profilednn_model::PrimitiveKind;

pub const ID: &str = "reorder-overhead";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let total = total_ms(ev);
    let reorders: Vec<&Entry> = exec(ev)
        .filter(|e| e.primitive.kind == PrimitiveKind::Reorder)
        .collect();
    let (time, share) = time_share(total, &reorders);
    if share < t.reorder_share {
        return Err(format!(
            "reorders take {} of oneDNN time (threshold {})",
            pct(share),
            pct(t.reorder_share)
        ));
    }
    // A reorder whose source and destination types differ converts data (f32 ↔ bf16); the
    // others only change layout.
    let (convert, layout): (Vec<&Entry>, Vec<&Entry>) = reorders.iter().partition(|e| {
        let dts: Vec<_> = e
            .primitive
            .mds
            .iter()
            .filter(|m| !m.is_absent())
            .map(|m| &m.data_type)
            .collect();
        dts.windows(2).any(|w| w[0] != w[1])
    });
    let ms = |v: &[&Entry]| ms_sum(v.iter().copied());
    let calls: u64 = reorders.iter().map(|e| e.calls).sum();
    let action = if ms(&convert) > ms(&layout) {
        "Most reorder time converts data types (f32 <-> bf16) every step: keep weights in the \
         compute type between steps (IPEX `ipex.optimize(model, optimizer, dtype=torch.bfloat16)` \
         keeps bf16 weights with an f32 master copy) instead of converting on every call."
    } else {
        "Keep one layout end to end: convert model and inputs to channels-last \
         (`model.to(memory_format=torch.channels_last)`, `x.to(memory_format=torch.channels_last)`) \
         so oneDNN's kernels read the framework's tensors directly, or let IPEX pre-pack weights \
         (`ipex.optimize`) so blocked weights are not reordered on every call."
    };
    Ok(finding(
        ev,
        ID,
        format!(
            "Reorders take {} of oneDNN time ({time:.1} ms in {calls} calls)",
            pct(share)
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("calls", json!(calls)),
            ("layout_time_ms", json!(ms(&layout))),
            ("conversion_time_ms", json!(ms(&convert))),
            ("heaviest", examples(reorders.iter().copied(), 5)),
        ]),
        Some(time),
        "all reorder time (a consistent layout removes reorders altogether)",
        action,
    ))
}
