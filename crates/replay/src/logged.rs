//! The log's steady state, read in a second pass over a log file: each problem's median call
//! after its warm-up, and the time outside oneDNN per steady iteration — what `project`
//! compares a replay with.

use profilednn_analysis::events::{for_each_event, Event};
pub use profilednn_analysis::iterations::{steady_median, warm_up_calls};
use profilednn_analysis::EventKind;
use std::collections::BTreeMap;

/// What the second pass found.
#[derive(Debug, Clone, Default)]
pub struct LoggedSteady {
    /// Each problem's median steady call, ms, by the replay key.
    pub medians: BTreeMap<String, f64>,
    /// Time outside oneDNN per steady iteration, ms (with the number of iterations it is the
    /// median of), when the log has iteration markers and timestamps and is one process's.
    pub outside: Option<(f64, usize)>,
}

/// Each problem's median steady call in the log file at `path` (by the replay key); `None` when
/// it cannot be opened (again).
pub fn medians_of(path: &std::path::Path) -> Option<BTreeMap<String, f64>> {
    let input = profilednn_verbose::LogInput::open(path).ok()?;
    Some(logged_steady(input, false).medians)
}

/// Each problem's median steady call in the log (by the replay key), and, for a log of one
/// process (`one_process`: no rank labels), its time outside oneDNN per steady iteration.
///
/// Medians: noise on a shared machine slows some calls, and the median ignores them. The first
/// third of a problem's calls ([`warm_up_calls`]) is left out: a training run's first
/// iterations are slower (PyTorch 2.15 ResNet-18, AMD EPYC Zen 3, 2 threads: 167, 139, 136 then
/// 114–136 ms per iteration), and in a short log they are most of the calls — with 5 iterations
/// the median of all calls read 20–40 % above the same run's 12-iteration figure. At most 4096
/// durations per problem are kept (a reservoir sample, uniform over the calls, so that the ones
/// after the warm-up stay a uniform sample of those).
///
/// Outside time: per iteration marker, the span from its first primitive's timestamp to the
/// next marker's first, less the oneDNN time between (as `plan` reads it), then the median
/// over the steady iterations. The timestamps' whole span instead (the fallback) counts the
/// first iteration's primitive creation and allocations: a 5-iteration PyTorch log read 137,
/// 61, 63, 63 ms outside oneDNN per iteration, a mean of 81 against a steady 63.
pub fn logged_steady(input: profilednn_verbose::LogInput, one_process: bool) -> LoggedSteady {
    let mut keys: std::collections::HashMap<usize, String> = Default::default();
    // Per problem: calls seen, and a sample of (call index, duration ms).
    let mut samples: BTreeMap<String, (u64, Vec<(u64, f64)>)> = BTreeMap::new();
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    // Per iteration marker: oneDNN ps after it, and the first primitive's timestamp after it.
    let mut marks: Vec<(u128, Option<f64>)> = Vec::new();
    for_each_event(input, |e| {
        let p = match e {
            Event::Iteration { .. } => {
                marks.push((0, None));
                return;
            }
            Event::Primitive(p) => p,
        };
        if let Some(m) = marks.last_mut() {
            if p.kind == EventKind::Exec {
                m.0 += u128::from(p.time_ps.unwrap_or(0));
            }
            if m.1.is_none() {
                m.1 = p.timestamp_ms;
            }
        }
        if p.kind != EventKind::Exec {
            return;
        }
        let Some(t) = p.time_ps else { return };
        let key = keys
            .entry(std::sync::Arc::as_ptr(&p.primitive) as usize)
            .or_insert_with(|| profilednn_benchdnn::problem_key(&p.primitive))
            .clone();
        let (seen, v) = samples.entry(key).or_default();
        let call = (*seen, t as f64 / 1e9);
        *seen += 1;
        if v.len() < 4096 {
            v.push(call);
        } else {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let j = (rng % *seen) as usize;
            if j < v.len() {
                v[j] = call;
            }
        }
    });
    let medians = samples
        .into_iter()
        .map(|(k, (seen, v))| {
            let warm = warm_up_calls(seen);
            let mut ms: Vec<f64> = v
                .iter()
                .filter(|&&(i, _)| i >= warm)
                .map(|&(_, ms)| ms)
                .collect();
            // A sample always holds steady calls (all of them up to 4096 calls); were one to
            // hold none, its whole would be the figure.
            if ms.is_empty() {
                ms = v.iter().map(|&(_, ms)| ms).collect();
            }
            ms.sort_by(f64::total_cmp);
            (k, ms[ms.len() / 2])
        })
        .collect();
    LoggedSteady {
        medians,
        outside: if one_process {
            outside_per_steady_iteration(marks)
        } else {
            None
        },
    }
}

/// The median time outside oneDNN over the steady iterations of `marks` (per marker: oneDNN ps
/// after it, first timestamp after it), read as `plan` reads a log's iterations.
fn outside_per_steady_iteration(marks: Vec<(u128, Option<f64>)>) -> Option<(f64, usize)> {
    let per_iteration: Vec<Option<f64>> =
        profilednn_analysis::ranks::iteration_times_of_marks(marks)
            .into_iter()
            .map(|i| i.outside_ms)
            .collect();
    steady_median(&[per_iteration])
}
