//! Which heap a training run had, read from its log: whether the framework's allocator kept the
//! pages of the buffers it freed (a scratchpad, last iteration's `.grad`) or gave them back to
//! the kernel, so that every call faulted them in again.
//!
//! The replay cannot know it from the program: it depends on everything else the framework's
//! heap held. On an AMD EPYC Zen 4 (PyTorch 2.15, ResNet-18 64×64, 2 threads) the copies of the
//! 512×512×3×3 weight gradient into `.grad` ran 0.9–1.1 ms in the log, 0.99 replayed with kept
//! pages and 3.1 with new ones; on an AMD EPYC Zen 3 the same script's backward-weights
//! scratchpad faulted in every call (18,515 faults per iteration in PyTorch, 20,654 in a per-call
//! replay from the C heap; 12.5–15.5 ms logged, 9.7 from the C heap, 6.0 allocated once). So both replays of the logged
//! iteration are run, shortly, and the problems whose time depends on it — new pages cost them
//! at least a quarter more — say which one the log is nearer to. A what-if replay takes the
//! choice of its log: the rewritten calls run in the same framework's heap.

use super::allocation::{Allocation, Heap};
use super::sequence::{replay_sequence, ResultsFor, SequenceTiming};
use super::{problem_key, Session};
use profilednn_model::Primitive;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The short replays of the choice: a few blocks of the logged iteration, at most 1.5 s each.
const CALIBRATION: SequenceTiming = SequenceTiming {
    warmup: 2,
    block_min_iterations: 1,
    block_min_ms: 100.0,
    min_blocks: 3,
    min_time_ms: 400.0,
    target_dispersion: 0.05,
    max_time_ms: 1500.0,
    allocation: Some(Allocation::PerCall),
    heap: None,
};

/// A problem of the logged iteration: calls per iteration, and its per-call time logged,
/// replayed with kept pages, replayed with new pages (ms).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub problem: String,
    pub calls: f64,
    pub logged: f64,
    pub warm: f64,
    pub cold: f64,
}

/// The heap nearer to the log, and why, from the problems of the logged iteration: those
/// whose call costs at least a quarter more (and 10 µs) with new pages decide, by where the
/// logged time lies between the two replays (`f`: 0 at kept pages, 1 at new ones; cold from
/// `f ≥ 0.5`). The logged times are first put on the replay's scale by the median ratio
/// replayed (warm) / logged of the other problems, so that a machine in a slower phase than
/// when it recorded, or another oneDNN, does not read as page faults. Kept pages when no
/// problem depends on it, or its stake is under 2 % of the iteration: then the two agree
/// anyway; `None` when no problem of the iteration was both logged and replayed.
pub fn decide(rows: &[Row]) -> Option<(Heap, String)> {
    if rows.is_empty() {
        return None;
    }
    let total: f64 = rows.iter().map(|r| r.calls * r.warm).sum();
    let depends = |r: &Row| r.cold - r.warm > (0.25 * r.warm).max(0.01);
    let sensitive: Vec<&Row> = rows.iter().filter(|r| depends(r)).collect();
    let stake: f64 = sensitive.iter().map(|r| r.calls * (r.cold - r.warm)).sum();
    if sensitive.is_empty() || stake < 0.02 * total {
        return Some((
            Heap::Warm,
            format!(
                "no problem of the logged iteration depends on it (new pages would add {stake:.2} ms to {total:.2} per iteration): freed pages kept"
            ),
        ));
    }
    let ratios: Vec<f64> = rows
        .iter()
        .filter(|r| !depends(r) && r.logged > 0.0 && r.warm > 0.0)
        .map(|r| r.warm / r.logged)
        .collect();
    let scale = if ratios.is_empty() {
        1.0
    } else {
        super::stability::median(&ratios)
    };
    let at = |f: &dyn Fn(&Row) -> f64| -> f64 { sensitive.iter().map(|r| r.calls * f(r)).sum() };
    let (logged, warm, cold) = (at(&|r| r.logged * scale), at(&|r| r.warm), at(&|r| r.cold));
    let f = (logged - warm) / stake;
    let heap = if f >= 0.5 { Heap::Cold } else { Heap::Warm };
    let largest = sensitive
        .iter()
        .max_by(|a, b| (a.calls * (a.cold - a.warm)).total_cmp(&(b.calls * (b.cold - b.warm))))
        .map(|r| r.problem.as_str())
        .unwrap_or_default();
    Some((
        heap,
        format!(
            "{} problem(s) whose calls fault new pages in (most: {largest}) take {logged:.2} ms per iteration in the log (its times × {scale:.2}, the other problems' replayed / logged), {warm:.2} replayed with freed pages kept, {cold:.2} with new pages each call (f = {f:.2}): {}",
            sensitive.len(),
            match heap {
                Heap::Cold => "new pages each call",
                _ => "freed pages kept",
            }
        ),
    ))
}

/// `t` with the heap the logged `iteration` shows, and why (`None`: nothing to choose — given,
/// or everything allocated once). `logged` reads each problem's steady per-call median in the
/// log ([`crate::logged::logged_steady`]; `None` when the log cannot be read again) — called
/// only when there is something to choose, so a log allocated once is not read twice;
/// `log_threads`: the log's thread count, at which the two
/// short replays of the iteration run (a `--threads` what-if replays at another one after).
pub fn choose(
    s: &Session,
    iteration: &[Arc<Primitive>],
    logged: impl FnOnce() -> Option<BTreeMap<String, f64>>,
    log_threads: Option<u64>,
    t: &SequenceTiming,
    mut progress: impl FnMut(usize, usize, &str) -> bool,
) -> (SequenceTiming, Option<String>) {
    let allocation = t
        .allocation
        .unwrap_or_else(|| Allocation::of_iteration(iteration).0);
    if t.heap.is_some() || allocation == Allocation::Once || iteration.is_empty() {
        return (*t, None);
    }
    let Some(logged) = logged() else {
        return given_up(t, "the log cannot be read a second time");
    };
    // Per problem: calls per iteration, and a name for the reason.
    let mut per_call: BTreeMap<String, (f64, String)> = BTreeMap::new();
    for p in iteration {
        per_call
            .entry(problem_key(p))
            .or_insert_with(|| (0.0, format!("{} {} {}", p.kind, p.prop_kind, p.problem)))
            .0 += 1.0;
    }
    // At the log's thread count, the times compared with the log's; set back to the replay's
    // on every way out (`Restore`).
    let now = crate::plan::threads::get(&s.dnnl);
    let mut at = String::new();
    let _restore = match (log_threads, now) {
        (Some(n), Some(m)) if n != m => {
            let restore = Restore(s, m);
            if let Err(e) = crate::plan::threads::set(&s.dnnl, n) {
                return given_up(t, &format!("the log's {n} threads could not be set ({e})"));
            }
            Some(restore)
        }
        (Some(_), Some(_)) => None,
        (Some(n), None) => {
            at = format!(" (at this runtime's thread count: the log's {n} could not be set)");
            None
        }
        (None, _) => {
            at = " (at the replay's thread count: the log does not say its own)".to_string();
            None
        }
    };
    let Some(replayed) = replay_both(s, iteration, &mut progress) else {
        return (*t, None);
    };
    let rows: Vec<Row> = per_call
        .iter()
        .filter_map(|(k, (calls, name))| {
            Some(Row {
                problem: name.clone(),
                calls: *calls,
                logged: *logged.get(k)?,
                warm: *replayed[0].get(k)?,
                cold: *replayed[1].get(k)?,
            })
        })
        .collect();
    let Some((heap, why)) = decide(&rows) else {
        return given_up(
            t,
            "the short replays measured no problem the log times (an iteration too long for them, or a log without times)",
        );
    };
    (
        SequenceTiming {
            heap: Some(heap),
            ..*t
        },
        Some(format!("as logged{at}: {why}")),
    )
}

/// Kept pages, not read from the log, and why.
fn given_up(t: &SequenceTiming, why: &str) -> (SequenceTiming, Option<String>) {
    (
        SequenceTiming {
            heap: Some(Heap::Warm),
            ..*t
        },
        Some(format!("not read from the log: {why}; freed pages kept")),
    )
}

/// Sets the OpenMP thread count back to `.1` when dropped.
struct Restore<'s>(&'s Session, u64);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        // It held before, so it holds again.
        let _ = crate::plan::threads::set(&self.0.dnnl, self.1);
    }
}

/// Per heap (warm, cold), each problem's replayed per-call median; `None` when interrupted.
fn replay_both(
    s: &Session,
    iteration: &[Arc<Primitive>],
    progress: &mut impl FnMut(usize, usize, &str) -> bool,
) -> Option<Vec<HashMap<String, f64>>> {
    let mut replayed = Vec::new();
    for heap in [Heap::Warm, Heap::Cold] {
        let timing = SequenceTiming {
            heap: Some(heap),
            ..CALIBRATION
        };
        let (results, _) = replay_sequence(
            s,
            ResultsFor::Rewritten,
            iteration,
            String::new(),
            &timing,
            |i, n, what| progress(i, n, &format!("heap ({}): {what}", heap.as_str())),
        );
        let by_key: HashMap<String, f64> = results
            .into_iter()
            .filter_map(|r| r.measurement.map(|m| (r.key, m.median_ms)))
            .collect();
        replayed.push(by_key);
        if super::stopped() {
            return None;
        }
    }
    Some(replayed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(calls: f64, logged: f64, warm: f64, cold: f64) -> Row {
        Row {
            problem: format!("p{logged}"),
            calls,
            logged,
            warm,
            cold,
        }
    }

    /// The figures of the two machines of the module doc: Zen 4's gradient copies (logged at
    /// the kept-pages replay), Zen 3's backward-weights scratchpad (logged above even the
    /// new-pages replay), beside problems that do not depend on it.
    #[test]
    fn the_log_decides_between_kept_and_new_pages() {
        // Problems that do not depend on it, logged as replayed (scale 1).
        let others = [row(20.0, 0.45, 0.45, 0.47), row(3.0, 1.0, 1.0, 1.1)];
        let zen4 = [&others[..], &[row(3.0, 1.0, 0.99, 3.1)]].concat();
        let (h, why) = decide(&zen4).unwrap();
        assert_eq!(h, Heap::Warm, "{why}");
        // f = (3·1.0 − 3·0.99) / (3·(3.1 − 0.99)) ≈ 0.005
        assert!(
            why.contains("f = 0.00") || why.contains("f = 0.01"),
            "{why}"
        );
        assert!(why.contains("× 1.00"), "{why}");
        let zen3 = [&others[..], &[row(1.0, 14.0, 6.0, 9.7)]].concat();
        let (h, why) = decide(&zen3).unwrap();
        assert_eq!(h, Heap::Cold, "{why}");
        // f = (14 − 6) / (9.7 − 6) ≈ 2.16: beyond the new pages, still nearer them.
        assert!(why.contains("f = 2.16"), "{why}");
        // Halfway: cold from f = 0.5.
        assert_eq!(decide(&[row(1.0, 2.0, 1.0, 3.0)]).unwrap().0, Heap::Cold);
        assert_eq!(decide(&[row(1.0, 1.9, 1.0, 3.0)]).unwrap().0, Heap::Warm);
    }

    /// A log 20 % slower than the replay in every problem (a slower phase of the machine when
    /// it recorded, another oneDNN) is no sign of page faults: warm 1.0, cold 1.3, logged 1.2
    /// would read f = 0.67 (cold) unscaled; scaled by 1/1.2 it reads 0.
    #[test]
    fn a_log_slower_everywhere_does_not_read_as_faults() {
        let slower = [
            row(10.0, 0.6, 0.5, 0.52),
            row(4.0, 2.4, 2.0, 2.1),
            row(2.0, 1.2, 1.0, 1.3),
        ];
        let (h, why) = decide(&slower).unwrap();
        assert_eq!(h, Heap::Warm, "{why}");
        assert!(why.contains("× 0.83") && why.contains("f = 0.00"), "{why}");
        // Without problems to scale by, the log is taken as it is.
        let (h, why) = decide(&slower[2..]).unwrap();
        assert_eq!(h, Heap::Cold, "{why}");
        assert!(why.contains("f = 0.67"), "{why}");
    }

    #[test]
    fn nothing_to_decide_keeps_the_pages() {
        // No problem slower by a quarter with new pages.
        let (h, why) = decide(&[row(10.0, 5.0, 1.0, 1.2)]).unwrap();
        assert_eq!(h, Heap::Warm);
        assert!(why.starts_with("no problem"), "{why}");
        // One that is, but 1 % of the iteration: the two replays would agree.
        let (h, why) = decide(&[row(1.0, 0.09, 0.02, 0.1), row(1.0, 9.0, 8.0, 8.0)]).unwrap();
        assert_eq!(h, Heap::Warm);
        assert!(why.starts_with("no problem"), "{why}");
        assert!(decide(&[]).is_none());
    }
}
