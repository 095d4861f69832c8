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

/// Primitives whose identical calls ran far apart, with their share of oneDNN time.
pub struct Pollution<'a> {
    /// Each polluted primitive with its spread (mean of the calls but the slowest, over the
    /// fastest).
    pub primitives: Vec<(&'a Entry, f64)>,
    pub time_ms: f64,
    pub share: f64,
}

impl Pollution<'_> {
    /// Whether the rule fires: a share of oneDNN time large enough to move its figures.
    pub fn fires(&self, t: &Thresholds) -> bool {
        !self.primitives.is_empty() && self.share >= t.polluted_share
    }

    /// The largest spread.
    pub fn worst(&self) -> f64 {
        self.primitives
            .iter()
            .map(|(_, s)| *s)
            .fold(0.0f64, f64::max)
    }

    /// Why a figure built on these times is not headlined (the projections', for one).
    pub fn reason(&self) -> String {
        format!(
            "the log's timings look polluted ({ID}: {} of oneDNN time in primitives whose \
             identical calls ran up to {:.0}x their fastest), so a ratio against the logged time \
             is noise; record again on a quiet machine",
            pct(self.share),
            self.worst()
        )
    }
}

/// The heaviest `n` polluted primitives as evidence rows, each with its fastest call, median
/// and p90: the spread the finding is about, which the reader can check.
fn spread_rows(p: &Pollution, n: usize) -> Value {
    let mut rows = examples(p.primitives.iter().map(|(e, _)| *e), n);
    if let Value::Array(v) = &mut rows {
        // The rows' order: [`examples`]'s stable sort by time over the same entries.
        let mut heaviest: Vec<&Entry> = p.primitives.iter().map(|(e, _)| *e).collect();
        heaviest.sort_by_key(|e| std::cmp::Reverse(e.time_ps));
        for (row, e) in v.iter_mut().zip(heaviest) {
            row["min_ms"] = json!(e.min_ps as f64 / 1e9);
            row["median_ms"] = json!(e.durations.quantile_ms(0.5));
            row["p90_ms"] = json!(e.durations.quantile_ms(0.9));
        }
    }
    rows
}

/// The primitives of `ev` whose timings look polluted, whether or not they fire the rule.
pub fn detect<'a>(ev: &Evidence<'a>) -> Pollution<'a> {
    let total: f64 = ms_sum(exec(ev));
    let spread = |e: &Entry| {
        let timed = e.calls - e.untimed_calls;
        if timed < MIN_CALLS || e.min_ps == 0 {
            return None;
        }
        let rest = (e.time_ps.saturating_sub(e.max_ps as u128)) as f64 / (timed - 1) as f64;
        Some(rest / e.min_ps as f64)
    };
    let primitives: Vec<(&Entry, f64)> = ev
        .profile
        .entries
        .iter()
        .filter(|e| e.event == EventKind::Exec)
        .filter_map(|e| spread(e).filter(|s| *s >= SPREAD).map(|s| (e, s)))
        .collect();
    let time_ms: f64 = primitives.iter().map(|(e, _)| e.time_ms()).sum();
    let share = if total > 0.0 { time_ms / total } else { 0.0 };
    Pollution {
        primitives,
        time_ms,
        share,
    }
}

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let p = detect(ev);
    if !p.fires(t) {
        return Err(format!(
            "{} of oneDNN time is in primitives whose identical calls average {SPREAD}x their \
             fastest or more (threshold {})",
            pct(p.share),
            pct(t.polluted_share)
        ));
    }
    let worst = p.worst();
    Ok(finding(
        ev,
        ID,
        format!(
            "Timings look polluted: {} primitive(s) with {} of oneDNN time ran their identical calls \
             up to {worst:.0}x their fastest on average: the machine was busy while recording, or its \
             threads were descheduled",
            p.primitives.len(),
            pct(p.share)
        ),
        map(vec![
            ("share", json!(p.share)),
            ("time_ms", json!(p.time_ms)),
            ("primitives", json!(p.primitives.len())),
            ("worst_spread", json!(worst)),
            ("heaviest", spread_rows(&p, 5)),
        ]),
        None,
        "none: the figures themselves are in doubt",
        "Record again on a quiet machine (nothing else running: check `uptime`'s load and `top`), \
         or pin the training to cores no other process uses (`taskset`, `numactl`). Until then, \
         read ratios built on these times (backward against forward, replay against log, \
         projected speed-ups) as noise, not findings.",
    ))
}
