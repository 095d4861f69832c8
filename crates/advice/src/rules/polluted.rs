//! `timings-polluted`: identical calls ran an order of magnitude apart, most of them slow: the
//! machine was busy while the log was recorded, and every figure built on its times is suspect.
//!
//! A newcomer recorded while two other processes used both vCPUs: one 2×256×8×8 reorder took
//! 0.005–0.03 ms or 7–8 ms (median 7.48 over 168 calls), and `advise` built "backward weights
//! 18.6× forward" on such times without a word. One slow call among fast ones is a cold start
//! (first touch, JIT) and normal; here the calls after the slowest are themselves slow on
//! average, many times the fastest one.

use super::*;

pub const ID: &str = "timings-polluted";

/// Calls a primitive needs before its spread says anything.
const MIN_CALLS: u64 = 10;
/// The mean of the calls other than the slowest, over the fastest, that marks a primitive as
/// polluted; a quiet machine's identical calls stay within a few times of each other (caches,
/// page faults), not ten.
const SPREAD: f64 = 10.0;
/// The share of oneDNN time in such primitives that fires the rule.
const SHARE: f64 = 0.05;

pub fn check(ev: &Evidence, _t: &Thresholds) -> Result<Finding, String> {
    let total: f64 = ms_sum(exec(ev));
    let spread = |e: &&Entry| {
        let timed = e.calls - e.untimed_calls;
        if timed < MIN_CALLS || e.min_ps == 0 {
            return None;
        }
        let rest = (e.time_ps.saturating_sub(e.max_ps as u128)) as f64 / (timed - 1) as f64;
        Some(rest / e.min_ps as f64)
    };
    let polluted: Vec<(&Entry, f64)> = exec(ev)
        .filter_map(|e| spread(&e).filter(|s| *s >= SPREAD).map(|s| (e, s)))
        .collect();
    let time: f64 = polluted.iter().map(|(e, _)| e.time_ms()).sum();
    let share = if total > 0.0 { time / total } else { 0.0 };
    if polluted.is_empty() || share < SHARE {
        return Err(format!(
            "{} of oneDNN time is in primitives whose identical calls average {SPREAD}x their \
             fastest or more (threshold {})",
            pct(share),
            pct(SHARE)
        ));
    }
    let worst = polluted.iter().map(|(_, s)| *s).fold(0.0f64, f64::max);
    Ok(finding(
        ev,
        ID,
        format!(
            "Timings look polluted: {} primitive(s) with {} of oneDNN time ran their identical calls \
             up to {worst:.0}x their fastest on average: the machine was busy while recording, or its \
             threads were descheduled",
            polluted.len(),
            pct(share)
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("primitives", json!(polluted.len())),
            ("worst_spread", json!(worst)),
            (
                "heaviest",
                examples(polluted.iter().map(|(e, _)| *e), 5),
            ),
        ]),
        None,
        "none: the figures themselves are in doubt",
        "Record again on a quiet machine (nothing else running: check `uptime`'s load and `top`), \
         or pin the training to cores no other process uses (`taskset`, `numactl`). Until then, \
         read ratios built on these times (backward against forward, replay against log, \
         projected speed-ups) as noise, not findings.",
    ))
}
