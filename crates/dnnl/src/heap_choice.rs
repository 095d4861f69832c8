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
//! at least a quarter more — say which one the log is nearer to, for the reorders' buffers
//! (the gradients' copies) and the other primitives' (their scratchpads) apart. A what-if
//! replay takes the choice of its log, call by call: a rewritten call's buffers take new pages
//! when the logged call it came from is of a kind the log showed faulting. One heap for every
//! buffer was wrong there: on the Zen 4 a CI's f32 run whose reorders read as on new pages
//! (16.6 ms logged where other runs of the script read 10.6) gave new pages to the bf16
//! what-if's backward-weights scratchpads too, and its projection read +85 … +120 % against the
//! real bf16 run (with a pair of this session: new pages for every buffer +88 %, kept +2 %).

use super::sequence::{replay_sequence, ResultsFor, SequenceTiming};
use super::{Prefixed, Progress, Session};
use profilednn_benchdnn::problem_key;
use profilednn_model::{Primitive, PrimitiveKind};
use profilednn_replay::allocation::{Allocation, Heap};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// The short replays of the choice: a few blocks of the logged iteration, at most 1.5 s each.
fn calibration(heap: Heap) -> SequenceTiming {
    SequenceTiming {
        warmup: 2,
        block_min_iterations: 1,
        block_min_ms: 100.0,
        min_blocks: 3,
        min_time_ms: 400.0,
        target_dispersion: 0.05,
        max_time_ms: 1500.0,
        allocation: Some(Allocation::PerCall),
        heap: Some(heap),
        cold: Default::default(),
    }
}

/// A problem of the logged iteration: its key ([`problem_key`]), a name for the reason,
/// whether it is a reorder, calls per iteration, and its per-call time logged, replayed with
/// kept pages, replayed with new pages (ms).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub problem: String,
    pub reorder: bool,
    pub calls: f64,
    pub logged: f64,
    pub warm: f64,
    pub cold: f64,
}

/// What the log shows: the heap, the problems whose buffers take new pages (with
/// [`Heap::AsLogged`]), and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub heap: Heap,
    pub cold: BTreeSet<String>,
    pub why: String,
}

/// The two kinds of per-call buffer a framework's heap may treat differently, each decided on
/// its own: the destinations of the reorders (a weight gradient's copy into `.grad`, allocated
/// per iteration and live to its end) and the scratchpads of the other primitives (allocated
/// around one call).
const CLASSES: [(bool, &str); 2] = [
    (true, "reorders (the gradients' copies into .grad)"),
    (false, "the other primitives (their scratchpads)"),
];

/// The heap nearer to the log, and why, from the problems of the logged iteration: those whose
/// call costs at least a quarter more (and 10 µs) with new pages decide, by where the logged
/// time lies between the two replays (`f`: 0 at kept pages, 1 at new ones; new pages from
/// `f ≥ 0.5`) — for the reorders and for the other primitives apart (`CLASSES`): a
/// framework's heap need not treat a `.grad` copy live to the end of the iteration like a
/// scratchpad freed after its call, and a what-if rewrites the calls, so the new pages go only
/// to the buffers of the kind the log shows faulting ([`Heap::AsLogged`]; each class's
/// problems, sensitive or not in the log: a bf16 scratchpad twice its f32 one's size may
/// depend on it where the f32 one did not). The logged times are first put on the replay's
/// scale by the median ratio replayed (warm) / logged of the problems that do not depend on
/// it, so that a machine in a slower phase than when it recorded, or another oneDNN, does not
/// read as page faults. A class keeps its pages when none of its problems depends on it, or
/// their stake is under 2 % of the iteration (then the two agree anyway); `None` when no
/// problem of the iteration was both logged and replayed.
pub fn decide(rows: &[Row]) -> Option<Choice> {
    if rows.is_empty() {
        return None;
    }
    let total: f64 = rows.iter().map(|r| r.calls * r.warm).sum();
    let depends = |r: &Row| r.cold - r.warm > (0.25 * r.warm).max(0.01);
    let ratios: Vec<f64> = rows
        .iter()
        .filter(|r| !depends(r) && r.logged > 0.0 && r.warm > 0.0)
        .map(|r| r.warm / r.logged)
        .collect();
    let scale = if ratios.is_empty() {
        1.0
    } else {
        profilednn_replay::stability::median(&ratios)
    };
    let stake_of = |r: &&Row| r.calls * (r.cold - r.warm);
    let mut cold = BTreeSet::new();
    let mut why = Vec::new();
    for (reorder, name) in CLASSES {
        let class: Vec<&Row> = rows.iter().filter(|r| r.reorder == reorder).collect();
        let sensitive: Vec<&Row> = class.iter().copied().filter(|r| depends(r)).collect();
        let stake: f64 = sensitive.iter().map(stake_of).sum();
        if sensitive.is_empty() || stake < 0.02 * total {
            if !class.is_empty() {
                why.push(format!(
                    "{name}: none depends on it (new pages would add {stake:.2} ms per iteration): freed pages kept"
                ));
            }
            continue;
        }
        let at =
            |f: &dyn Fn(&Row) -> f64| -> f64 { sensitive.iter().map(|r| r.calls * f(r)).sum() };
        let (logged, warm, new) = (at(&|r| r.logged * scale), at(&|r| r.warm), at(&|r| r.cold));
        let f = (logged - warm) / stake;
        let largest = sensitive
            .iter()
            .max_by(|a, b| stake_of(a).total_cmp(&stake_of(b)))
            .map(|r| r.problem.as_str())
            .unwrap_or_default();
        let on_new = f >= 0.5;
        if on_new {
            cold.extend(class.iter().map(|r| r.key.clone()));
        }
        why.push(format!(
            "{name}: {} problem(s) whose calls fault new pages in (most: {largest}) take {logged:.2} ms per iteration in the log, {warm:.2} replayed with freed pages kept, {new:.2} with new pages each call (f = {f:.2}): {}",
            sensitive.len(),
            if on_new { "new pages each call" } else { "freed pages kept" }
        ));
    }
    let heap = if cold.is_empty() {
        Heap::Warm
    } else {
        Heap::AsLogged
    };
    Some(Choice {
        heap,
        cold,
        why: format!(
            "the log's times × {scale:.2} (the replayed / logged ratio of the problems that do not depend on it); {}",
            why.join("; ")
        ),
    })
}

/// `t` with the heap the logged `iteration` shows, and why (`None`: nothing to choose — given,
/// or everything allocated once). `logged` reads each problem's steady per-call median in the
/// log ([`profilednn_replay::logged::logged_steady`]; `None` when the log cannot be read again) — called
/// only when there is something to choose, so a log allocated once is not read twice;
/// `log_threads`: the log's thread count, at which the two
/// short replays of the iteration run (a `--threads` what-if replays at another one after).
pub fn choose(
    s: &Session,
    iteration: &[Arc<Primitive>],
    logged: impl FnOnce() -> Option<BTreeMap<String, f64>>,
    log_threads: Option<u64>,
    t: &SequenceTiming,
    progress: &dyn Progress,
) -> (SequenceTiming, Option<String>) {
    let allocation = t
        .allocation
        .unwrap_or_else(|| Allocation::of_iteration(iteration).0);
    if t.heap.is_some() || allocation == Allocation::Once || iteration.is_empty() {
        return (t.clone(), None);
    }
    let Some(logged) = logged() else {
        return given_up(t, "the log cannot be read a second time");
    };
    // Per problem: calls per iteration, and a name for the reason.
    let mut per_call: BTreeMap<String, (f64, String, bool)> = BTreeMap::new();
    for p in iteration {
        per_call
            .entry(problem_key(p))
            .or_insert_with(|| {
                (
                    0.0,
                    format!("{} {} {}", p.kind, p.prop_kind, p.problem),
                    p.kind == PrimitiveKind::Reorder,
                )
            })
            .0 += 1.0;
    }
    // At the log's thread count, the times compared with the log's; set back to the replay's
    // on every way out (`Restore`).
    let now = crate::threads::get(&s.dnnl);
    let mut at = String::new();
    let _restore = match (log_threads, now) {
        (Some(n), Some(m)) if n != m => {
            let restore = Restore(s, m);
            if let Err(e) = crate::threads::set(&s.dnnl, n) {
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
    let Some(replayed) = replay_both(s, iteration, progress) else {
        return (t.clone(), None);
    };
    let rows: Vec<Row> = per_call
        .iter()
        .filter_map(|(k, (calls, name, reorder))| {
            Some(Row {
                key: k.clone(),
                problem: name.clone(),
                reorder: *reorder,
                calls: *calls,
                logged: *logged.get(k)?,
                warm: *replayed[0].get(k)?,
                cold: *replayed[1].get(k)?,
            })
        })
        .collect();
    let Some(choice) = decide(&rows) else {
        return given_up(
            t,
            "the short replays measured no problem the log times (an iteration too long for them, or a log without times)",
        );
    };
    (
        SequenceTiming {
            heap: Some(choice.heap),
            cold: Arc::new(choice.cold),
            ..t.clone()
        },
        Some(format!("as logged{at}: {}", choice.why)),
    )
}

/// Whether a replay projects another run of the log's training rather than the logged one:
/// the iteration rewritten (`rewrites`: a what-if that changes a call), or replayed at a
/// thread count known to differ from the log's — where either count is unknown, the same run
/// as far as can be told.
pub fn is_another_run(
    rewrites: bool,
    replay_threads: Option<u64>,
    log_threads: Option<u64>,
) -> bool {
    rewrites || matches!((replay_threads, log_threads), (Some(r), Some(l)) if r != l)
}

/// What a log's heap says of *another* run of its training — a what-if (`--as`, `--layout`,
/// `--batch`), another thread count, another split of `plan` — and why: its gradients' copies
/// into `.grad` keep their pages, whatever this log's did; the other primitives' scratchpads
/// keep the log's choice. Whether a run's heap gives the gradients' pages back each iteration
/// is an accident of that run: the same ResNet-18 script recorded 47 times in three CIs on an
/// AMD EPYC Zen 4 (2 threads, PyTorch 2.15) read f ≥ 0.5 in 6 recordings, 0.3–0.5 in 5, near 0
/// in the others (median 0.08), and the what-ifs that carried a log's new pages over read
/// +22 … +64 % against their real runs (about −1 … +15 % less those pages' price). A scratchpad
/// allocated around each call is another matter: its pages come back new every call when the
/// allocator maps blocks of its size afresh (glibc above its threshold), in every run — the
/// backward-weights scratchpads of an AMD EPYC Zen 3 did in every recording.
/// `None` when the log's choice gave no gradient copy new pages (nothing changes).
pub fn for_another_run(
    t: &SequenceTiming,
    iteration: &[Arc<Primitive>],
) -> (SequenceTiming, Option<&'static str>) {
    if t.heap != Some(Heap::AsLogged) {
        return (t.clone(), None);
    }
    let reorders: BTreeSet<String> = iteration
        .iter()
        .filter(|p| p.kind == PrimitiveKind::Reorder)
        .map(|p| problem_key(p))
        .collect();
    if !t.cold.iter().any(|k| reorders.contains(k)) {
        return (t.clone(), None);
    }
    let cold: BTreeSet<String> = t.cold.difference(&reorders).cloned().collect();
    let heap = if cold.is_empty() {
        Heap::Warm
    } else {
        Heap::AsLogged
    };
    (
        SequenceTiming {
            heap: Some(heap),
            cold: Arc::new(cold),
            ..t.clone()
        },
        Some(
            "for another run of this training, the gradients' copies keep their pages: whether a \
             run's heap gives them back each iteration is an accident of that run (6 of 47 \
             recordings of one script on an AMD EPYC Zen 4 did); `--heap cold` projects them on \
             new pages",
        ),
    )
}

/// Kept pages, not read from the log, and why.
fn given_up(t: &SequenceTiming, why: &str) -> (SequenceTiming, Option<String>) {
    (
        SequenceTiming {
            heap: Some(Heap::Warm),
            ..t.clone()
        },
        Some(format!("not read from the log: {why}; freed pages kept")),
    )
}

/// Sets the OpenMP thread count back to `.1` when dropped.
struct Restore<'s>(&'s Session, u64);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        // It held before, so it holds again.
        let _ = crate::threads::set(&self.0.dnnl, self.1);
    }
}

/// Per heap (warm, cold), each problem's replayed per-call median; `None` when interrupted.
fn replay_both(
    s: &Session,
    iteration: &[Arc<Primitive>],
    progress: &dyn Progress,
) -> Option<Vec<HashMap<String, f64>>> {
    let mut replayed = Vec::new();
    for heap in [Heap::Warm, Heap::Cold] {
        let timing = calibration(heap);
        let (results, _) = replay_sequence(
            s,
            ResultsFor::Rewritten,
            iteration,
            String::new(),
            &timing,
            &Prefixed {
                inner: progress,
                prefix: format!("heap ({})", heap.as_str()),
            },
        );
        let by_key: HashMap<String, f64> = results
            .into_iter()
            .filter_map(|r| r.measurement.map(|m| (r.key, m.median_ms)))
            .collect();
        replayed.push(by_key);
        if progress.stopped() {
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
            key: format!("k{logged}"),
            problem: format!("p{logged}"),
            reorder: false,
            calls,
            logged,
            warm,
            cold,
        }
    }

    fn reorder(calls: f64, logged: f64, warm: f64, cold: f64) -> Row {
        Row {
            reorder: true,
            ..row(calls, logged, warm, cold)
        }
    }

    fn keys(c: &Choice) -> Vec<&str> {
        c.cold.iter().map(String::as_str).collect()
    }

    /// The figures of the two machines of the module doc: Zen 4's gradient copies (logged at
    /// the kept-pages replay), Zen 3's backward-weights scratchpad (logged above even the
    /// new-pages replay), beside problems that do not depend on it.
    #[test]
    fn the_log_decides_between_kept_and_new_pages() {
        // Problems that do not depend on it, logged as replayed (scale 1).
        let others = [row(20.0, 0.45, 0.45, 0.47), reorder(3.0, 0.3, 0.3, 0.31)];
        let zen4 = [&others[..], &[reorder(3.0, 1.01, 0.99, 3.1)]].concat();
        let c = decide(&zen4).unwrap();
        assert_eq!((c.heap, keys(&c)), (Heap::Warm, vec![]), "{}", c.why);
        // f = (3·1.01 − 3·0.99) / (3·(3.1 − 0.99)) ≈ 0.009
        assert!(c.why.contains("f = 0.01"), "{}", c.why);
        assert!(c.why.contains("× 1.00"), "{}", c.why);
        // Zen 3: the other primitives' buffers take new pages (the one that does not depend
        // on it too: its kind does), the reorders keep theirs.
        let zen3 = [&others[..], &[row(1.0, 14.0, 6.0, 9.7)]].concat();
        let c = decide(&zen3).unwrap();
        assert_eq!(
            (c.heap, keys(&c)),
            (Heap::AsLogged, vec!["k0.45", "k14"]),
            "{}",
            c.why
        );
        // f = (14 − 6) / (9.7 − 6) ≈ 2.16: beyond the new pages, still nearer them.
        assert!(c.why.contains("f = 2.16"), "{}", c.why);
        // Halfway: new pages from f = 0.5.
        assert_eq!(
            keys(&decide(&[row(1.0, 2.0, 1.0, 3.0)]).unwrap()),
            vec!["k2"]
        );
        assert_eq!(decide(&[row(1.0, 1.9, 1.0, 3.0)]).unwrap().heap, Heap::Warm);
    }

    /// The CI's case of the module doc: the reorders (gradient copies) logged as on new pages,
    /// the scratchpads as on kept ones — each kind gets its own pages, where one choice for
    /// both (summed f = 0.63 here) gave new pages to the scratchpads too.
    #[test]
    fn reorders_and_scratchpads_are_decided_apart() {
        let rows = [
            reorder(12.0, 1.3, 0.5, 1.5), // f = 0.8
            row(6.0, 1.05, 1.0, 1.6),     // f = 0.08
            row(30.0, 0.2, 0.2, 0.2),
        ];
        let c = decide(&rows).unwrap();
        assert_eq!(
            (c.heap, keys(&c)),
            (Heap::AsLogged, vec!["k1.3"]),
            "{}",
            c.why
        );
        assert!(
            c.why.contains("f = 0.80") && c.why.contains("f = 0.08"),
            "{}",
            c.why
        );
    }

    /// A log 20 % slower than the replay in every problem (a slower phase of the machine when
    /// it recorded, another oneDNN) is no sign of page faults: warm 1.0, cold 1.3, logged 1.2
    /// would read f = 0.67 (new pages) unscaled; scaled by 1/1.2 it reads 0.
    #[test]
    fn a_log_slower_everywhere_does_not_read_as_faults() {
        let slower = [
            row(10.0, 0.6, 0.5, 0.52),
            row(4.0, 2.4, 2.0, 2.1),
            row(2.0, 1.2, 1.0, 1.3),
        ];
        let c = decide(&slower).unwrap();
        assert_eq!(c.heap, Heap::Warm, "{}", c.why);
        assert!(
            c.why.contains("× 0.83") && c.why.contains("f = 0.00"),
            "{}",
            c.why
        );
        // Without problems to scale by, the log is taken as it is.
        let c = decide(&slower[2..]).unwrap();
        assert_eq!(
            (c.heap, keys(&c)),
            (Heap::AsLogged, vec!["k1.2"]),
            "{}",
            c.why
        );
        assert!(c.why.contains("f = 0.67"), "{}", c.why);
    }

    /// A run to come: the log's new pages leave the reorders (the gradients' copies), stay with
    /// the scratchpads; the heap is kept pages when nothing else took new ones.
    #[test]
    fn another_run_keeps_the_gradient_copies_pages() {
        use profilednn_whatif::testing::prim;
        let conv = prim("cpu,convolution,jit:avx512_core,backward_weights,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef:: dst:f32::blocked:abcd::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1");
        let copy = prim("cpu,reorder,jit:uni,undef,src:f32::blocked:Acdb16a::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,,64x64x3x3");
        let iteration = vec![conv.clone(), copy.clone()];
        let t = |cold: &[&Arc<Primitive>]| SequenceTiming {
            heap: Some(Heap::AsLogged),
            cold: Arc::new(cold.iter().map(|p| problem_key(p)).collect()),
            ..Default::default()
        };
        let (both, why) = for_another_run(&t(&[&conv, &copy]), &iteration);
        assert_eq!(both.heap, Some(Heap::AsLogged));
        assert_eq!(*both.cold, [problem_key(&conv)].into_iter().collect());
        assert!(why.is_some_and(|w| w.contains("accident")));
        let (copies, why) = for_another_run(&t(&[&copy]), &iteration);
        assert_eq!(copies.heap, Some(Heap::Warm));
        assert!(copies.cold.is_empty() && why.is_some());
        let (scratch, why) = for_another_run(&t(&[&conv]), &iteration);
        assert_eq!(*scratch.cold, *t(&[&conv]).cold);
        assert!(why.is_none());
        let warm = SequenceTiming {
            heap: Some(Heap::Warm),
            ..Default::default()
        };
        assert_eq!(for_another_run(&warm, &iteration).0.heap, Some(Heap::Warm));
    }

    #[test]
    fn another_run_is_a_rewrite_or_a_thread_count_known_to_differ() {
        assert!(!is_another_run(false, Some(2), Some(2)));
        assert!(is_another_run(false, Some(1), Some(2)));
        assert!(is_another_run(true, Some(2), Some(2)));
        // Unknown on either side: the same run, as far as can be told.
        assert!(!is_another_run(false, None, Some(2)));
        assert!(!is_another_run(false, Some(1), None));
        assert!(is_another_run(true, None, None));
    }

    #[test]
    fn nothing_to_decide_keeps_the_pages() {
        // No problem slower by a quarter with new pages.
        let c = decide(&[row(10.0, 5.0, 1.0, 1.2)]).unwrap();
        assert_eq!((c.heap, keys(&c)), (Heap::Warm, vec![]));
        assert!(c.why.contains("none depends on it"), "{}", c.why);
        // One that is, but 1 % of the iteration: the two replays would agree.
        let c = decide(&[row(1.0, 0.09, 0.02, 0.1), row(1.0, 9.0, 8.0, 8.0)]).unwrap();
        assert_eq!((c.heap, keys(&c)), (Heap::Warm, vec![]));
        assert!(c.why.contains("none depends on it"), "{}", c.why);
        assert!(decide(&[]).is_none());
    }
}
