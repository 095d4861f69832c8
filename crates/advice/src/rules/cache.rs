//! `creation-cache-misses`: primitives created again and again (level-2 logs).

use super::*;

pub const ID: &str = "creation-cache-misses";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let creates: Vec<&Entry> = ev
        .profile
        .entries
        .iter()
        .filter(|e| matches!(&e.event, EventKind::Create(_)))
        .collect();
    if creates.is_empty() {
        return Err(
            "the log has no creation lines (not applicable; record with ONEDNN_VERBOSE=2)".into(),
        );
    }
    let misses: Vec<&Entry> = creates
        .iter()
        .copied()
        .filter(|e| matches!(&e.event, EventKind::Create(c) if c.contains("miss")))
        .collect();
    // The first miss of each primitive is the cold start; later misses mean the cache evicted
    // it or the shapes keep changing.
    let repeated: u64 = misses.iter().map(|e| e.calls.saturating_sub(1)).sum();
    let repeated_ms: f64 = misses
        .iter()
        .filter(|e| e.calls > 1)
        .map(|e| e.time_ms() * (e.calls - 1) as f64 / e.calls as f64)
        .fold(0.0, |a, t| a + t);
    if repeated < t.repeated_misses {
        return Err(format!(
            "{} primitive(s) created with a cache miss, none repeatedly",
            misses.len()
        ));
    }
    Ok(finding(
        ev,
        ID,
        format!(
            "{repeated} repeated primitive-cache misses ({repeated_ms:.1} ms of creation time) in steady state"
        ),
        map(vec![
            ("repeated_misses", json!(repeated)),
            ("repeated_miss_ms", json!(repeated_ms)),
            ("distinct_primitives_missed", json!(misses.len())),
            ("heaviest", examples(misses.iter().copied().filter(|e| e.calls > 1), 5)),
        ]),
        Some(repeated_ms),
        "creation time of every miss after the first of the same primitive",
        "Primitives are being re-created: raise the primitive cache above the number of distinct \
         primitives (`ONEDNN_PRIMITIVE_CACHE_CAPACITY`, default 1024), and avoid shapes that change \
         every iteration (pad variable-size inputs to a few fixed sizes).",
    ))
}
