//! `tiny-primitives`: many very short calls (framework overhead, fragmentation).

use super::*;

pub const ID: &str = "tiny-primitives";

/// Assumed framework cost around each oneDNN call (dispatch, allocation, Python), µs.
const OVERHEAD_US: f64 = 5.0;

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let all_calls: u64 = exec(ev).map(|e| e.calls).sum();
    let tiny: Vec<&Entry> = exec(ev)
        .filter(|e| e.calls > 0 && e.time_ms() * 1e3 / (e.calls as f64) < t.tiny_us)
        .collect();
    let calls: u64 = tiny.iter().map(|e| e.calls).sum();
    let share = if all_calls > 0 {
        calls as f64 / all_calls as f64
    } else {
        0.0
    };
    if share < t.tiny_call_share || calls < 100 {
        return Err(format!(
            "{} of calls ({calls}) are shorter than {} µs (threshold {} of calls)",
            pct(share),
            t.tiny_us,
            pct(t.tiny_call_share)
        ));
    }
    let time: f64 = ms_sum(tiny.iter().copied());
    Ok(finding(
        ev,
        ID,
        format!(
            "{} of oneDNN calls ({calls}) take less than {} µs each ({time:.1} ms in all)",
            pct(share),
            t.tiny_us
        ),
        map(vec![
            ("call_share", json!(share)),
            ("calls", json!(calls)),
            ("time_ms", json!(time)),
            ("assumed_overhead_us_per_call", json!(OVERHEAD_US)),
            ("heaviest", examples(tiny.iter().copied(), 5)),
        ]),
        Some(calls as f64 * OVERHEAD_US / 1e3),
        "framework overhead around each call, assumed 5 µs (dispatch, allocation): outside oneDNN, so not in its time",
        "Many tiny primitives mean per-op overhead dominates: batch the work (larger batch size), \
         use fused/foreach optimizers (`torch.optim.SGD(..., foreach=True)` or `fused=True`, or \
         this project's fused optimizers) and fused losses, and `torch.compile` to merge small ops.",
    ))
}
