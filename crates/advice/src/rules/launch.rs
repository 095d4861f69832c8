//! `launch-config`: what the launch of a multi-rank run cost, from the launch `record --ranks`
//! wrote beside the log (the ranks' OMP_NUM_THREADS and who set it, the cgroup's CPU limit, the
//! ranks' affinity masks). The decisions are `profilednn_analysis::ranks::launch::costs`; this rule
//! prices them on the log's oneDNN time.

use super::*;

pub const ID: &str = "launch-config";

pub fn check(ev: &Evidence, _t: &Thresholds) -> Result<Finding, String> {
    if ev.ranks < 2 {
        return Err("a single rank (not applicable)".into());
    }
    let Some(launch) = ev.launch else {
        return Err(
            "no launch recorded beside the log (record the run with `profilednn record --ranks`)"
                .into(),
        );
    };
    let costs = profilednn_analysis::ranks::launch::costs(launch, ev.profile.metadata.threads);
    if costs.is_empty() {
        return Err("the launch looks right: threads, CPU limit and pinning agree".into());
    }
    // The ranks run side by side: the step waits for one rank's oneDNN time, the log's total
    // over the ranks. The best setting gives back at most the largest of the speed-ups.
    let per_rank_ms = ev.summary.total_time_ms / ev.ranks as f64;
    let speedup = costs
        .iter()
        .filter_map(|c| c.speedup)
        .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
    let gain = speedup.map(|s| per_rank_ms * (1.0 - 1.0 / s));
    let sentences: Vec<&str> = costs.iter().map(|c| c.sentence.as_str()).collect();
    let actions: Vec<&str> = costs.iter().map(|c| c.action.as_str()).collect();
    let title = match (speedup, gain) {
        (Some(s), Some(g)) => format!(
            "the launch left the ranks short of CPUs: {}; up to {s:.1}× on each rank's {per_rank_ms:.1} ms of oneDNN time ({g:.1} ms)",
            sentences.join("; ")
        ),
        _ => format!("the launch: {}", sentences.join("; ")),
    };
    Ok(finding(
        ev,
        ID,
        title,
        map(vec![
            (
                "settings",
                json!(costs.iter().map(|c| c.what).collect::<Vec<_>>()),
            ),
            ("speedup_up_to", json!(speedup)),
            ("per_rank_onednn_ms", json!(per_rank_ms)),
            ("launcher", json!(launch.launcher)),
            ("cpu_quota", json!(launch.cpu_quota)),
            ("host_cpus", json!(launch.host_cpus)),
        ]),
        gain,
        "each rank's oneDNN time × (1 − 1/speed-up), the speed-up being the CPUs given back \
         (perfect scaling: an upper bound)",
        &actions.join("; "),
    ))
}
