//! How a multi-rank run was launched, as `record --ranks` saw it from the ranks' own processes,
//! and what each launch setting costs.
//!
//! Three settings a log does not show slow a data-parallel CPU run silently: torchrun sets
//! `OMP_NUM_THREADS=1` for every rank when it is unset and more than one process runs per node
//! (each rank then runs one thread whatever the cores); a container's CPU limit (cgroup
//! `cpu.max`) can be below the host's count that `nproc` and `os.cpu_count()` report (Kubeflow's
//! `nproc auto` once sized the ranks by it); and ranks that are not pinned share every core, so
//! the OS moves their threads between them. `record --ranks` writes the facts beside the log
//! (`LOG_STEM.launch.json`); [`costs`] decides what they cost, the `launch-config` rule says so.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "profilednn.launch.v1";

/// The launch of one recording: the launching environment and each rank's process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Launch {
    pub schema: String,
    /// `torchrun`, `mpirun`, `srun` (none: `record` ran inside a rank, or no known launcher).
    #[serde(default)]
    pub launcher: Option<String>,
    /// Processes per node, as the launcher's options said (`--nproc-per-node`, `-n`).
    #[serde(default)]
    pub ranks_per_node: Option<u64>,
    /// `OMP_NUM_THREADS` in the environment the launcher was started with (none: unset).
    #[serde(default)]
    pub launch_omp_num_threads: Option<String>,
    /// Online CPUs of the host (what `nproc --all` counts).
    #[serde(default)]
    pub host_cpus: Option<u64>,
    /// The cgroup's CPU limit in CPUs (`cpu.max` quota / period; none: no limit).
    #[serde(default)]
    pub cpu_quota: Option<f64>,
    /// The ranks' processes, as sampled while they ran.
    #[serde(default)]
    pub ranks: Vec<RankLaunch>,
}

/// One rank's process as it ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankLaunch {
    /// `RANK` (or the launcher's equivalent) in its environment.
    pub rank: Option<u32>,
    /// `OMP_NUM_THREADS` in its environment (none: unset).
    pub omp_num_threads: Option<String>,
    /// The CPUs it may run on (`Cpus_allowed_list`: its affinity mask, `taskset`'s).
    pub cpus: Vec<u32>,
}

/// Where `record --ranks` writes the launch of `log`: `train.log.gz` → `train.launch.json`.
pub fn path_of(log: &Path) -> PathBuf {
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    let stem = name.strip_suffix(".log").unwrap_or(name);
    log.with_file_name(format!("{stem}.launch.json"))
}

/// The launch recorded beside `log`; `Ok(None)` without one (a log not recorded with
/// `record --ranks`, or stdin).
pub fn read(log: &Path) -> Result<Option<Launch>, String> {
    if log.as_os_str() == "-" {
        return Ok(None);
    }
    let path = path_of(log);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let l: Launch = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}: not a launch file ({SCHEMA}, as `record --ranks` writes it): {e}; delete it or \
             record again",
            path.display()
        )
    })?;
    if l.schema != SCHEMA {
        return Err(format!(
            "{}: schema '{}' is not '{SCHEMA}'",
            path.display(),
            l.schema
        ));
    }
    Ok(Some(l))
}

/// `0-3,8,10-11` (sysfs and `/proc/PID/status` lists) → the CPUs; `None` when malformed.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<u32>().ok()?..=b.trim().parse().ok()?),
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// cgroup v2 `cpu.max` (`max 100000`, `200000 100000`) → the limit in CPUs; `Some(None)`: no
/// limit; `None`: malformed.
pub fn parse_cpu_max(s: &str) -> Option<Option<f64>> {
    let mut f = s.split_whitespace();
    let quota = f.next()?;
    let period: f64 = f.next().map_or(Some(100_000.0), |p| p.parse().ok())?;
    if quota == "max" {
        return Some(None);
    }
    let q: f64 = quota.parse().ok()?;
    (period > 0.0 && q > 0.0).then_some(Some(q / period))
}

/// A launch setting that slowed the run, and by how much at most.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchCost {
    /// `omp-default`, `cpu-quota`, `unpinned`.
    pub what: &'static str,
    pub sentence: String,
    /// How many times faster the ranks' oneDNN time could be with the setting right (an upper
    /// bound: perfect scaling over the cores given back); none when the log cannot tell.
    pub speedup: Option<f64>,
    pub action: String,
}

/// What the launch cost the run: `threads_per_rank` is the log's thread count per rank (the
/// oneDNN header's `nthr`), used where the ranks' environment says nothing.
pub fn costs(l: &Launch, threads_per_rank: Option<u32>) -> Vec<LaunchCost> {
    let per_node = l
        .ranks_per_node
        .or((!l.ranks.is_empty()).then_some(l.ranks.len() as u64))
        .unwrap_or(1);
    if per_node < 2 {
        return Vec::new();
    }
    let rank_threads = |r: &RankLaunch| r.omp_num_threads.as_deref()?.trim().parse::<u64>().ok();
    let threads: Vec<u64> = l.ranks.iter().filter_map(rank_threads).collect();
    let per_rank = threads
        .iter()
        .max()
        .copied()
        .or(threads_per_rank.map(u64::from))
        .unwrap_or(1);
    let union: std::collections::BTreeSet<u32> = l
        .ranks
        .iter()
        .flat_map(|r| r.cpus.iter().copied())
        .collect();
    let allowed = (!union.is_empty())
        .then_some(union.len() as u64)
        .or(l.host_cpus);
    let quota_cpus = l.cpu_quota.map(|q| q.floor().max(1.0) as u64);
    let usable = match (allowed, quota_cpus) {
        (Some(a), Some(q)) => Some(a.min(q)),
        (a, q) => a.or(q),
    };
    let mut out = Vec::new();
    out.extend(omp_default(l, per_node, &threads, usable));
    out.extend(quota(l, per_node, per_rank));
    out.extend(unpinned(l, per_node, per_rank, &union));
    out
}

/// torchrun's silent `OMP_NUM_THREADS=1`: unset when launched, 1 in every rank, more CPUs per
/// rank than that.
fn omp_default(
    l: &Launch,
    per_node: u64,
    threads: &[u64],
    usable: Option<u64>,
) -> Option<LaunchCost> {
    let torchrun = l.launcher.as_deref() == Some("torchrun");
    let all_one =
        !threads.is_empty() && threads.len() == l.ranks.len() && threads.iter().all(|t| *t == 1);
    if !(torchrun && l.launch_omp_num_threads.is_none() && all_one) {
        return None;
    }
    let per_rank = usable? / per_node;
    (per_rank > 1).then(|| LaunchCost {
        what: "omp-default",
        sentence: format!(
            "OMP_NUM_THREADS was unset when torchrun started {per_node} ranks per node, so \
             torchrun set it to 1 in each: every rank ran 1 thread with {per_rank} CPUs of its \
             own ({} usable / {per_node} ranks)",
            usable.unwrap_or(0)
        ),
        speedup: Some(per_rank as f64),
        action: format!(
            "export OMP_NUM_THREADS={per_rank} before torchrun (usable CPUs / ranks per node)"
        ),
    })
}

/// A cgroup CPU limit below the host's count, with more threads than the limit.
fn quota(l: &Launch, per_node: u64, per_rank: u64) -> Option<LaunchCost> {
    let q = l.cpu_quota?;
    let host = l.host_cpus?;
    let total = per_node * per_rank;
    (q < host as f64 && total as f64 > q).then(|| LaunchCost {
        what: "cpu-quota",
        sentence: format!(
            "the container's CPU limit is {q:.1} CPUs (cgroup cpu.max) on a {host}-CPU host, and \
             {per_node} ranks × {per_rank} threads = {total} threads ran in it: each thread got \
             about {:.2} of a CPU (nproc and os.cpu_count() report the host's {host})",
            q / total as f64
        ),
        speedup: Some(total as f64 / q),
        action: format!(
            "size ranks × OMP_NUM_THREADS to the cgroup's {} CPUs (read /sys/fs/cgroup/cpu.max), \
             not the host's count",
            q.floor().max(1.0)
        ),
    })
}

/// Ranks whose affinity masks overlap: their threads share those CPUs.
fn unpinned(
    l: &Launch,
    per_node: u64,
    per_rank: u64,
    union: &std::collections::BTreeSet<u32>,
) -> Option<LaunchCost> {
    let n: usize = l.ranks.iter().map(|r| r.cpus.len()).sum();
    if l.ranks.len() < 2 || n <= union.len() {
        return None; // fewer than two ranks seen, or disjoint masks: pinned
    }
    let total = per_node * per_rank;
    let cpus = union.len() as u64;
    Some(LaunchCost {
        what: "unpinned",
        sentence: format!(
            "the {} ranks are not pinned: their affinity masks overlap ({} CPUs between them, \
             {total} threads), so the OS moves their threads across each other's cores{}",
            l.ranks.len(),
            cpus,
            if total > cpus {
                format!(", {total} threads on {cpus} CPUs")
            } else {
                " (the cost of the moves is not in the log)".to_string()
            }
        ),
        speedup: (total > cpus).then(|| total as f64 / cpus as f64),
        action: "pin each rank to its own cores: a wrapper running `taskset -c` (or `numactl \
                 --physcpubind`) with the CPUs of LOCAL_RANK, OMP_NUM_THREADS = its core count"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(rank: u32, omp: Option<&str>, cpus: &str) -> RankLaunch {
        RankLaunch {
            rank: Some(rank),
            omp_num_threads: omp.map(str::to_string),
            cpus: parse_cpu_list(cpus).unwrap(),
        }
    }

    fn torchrun(ranks: Vec<RankLaunch>) -> Launch {
        Launch {
            schema: SCHEMA.into(),
            launcher: Some("torchrun".into()),
            ranks_per_node: Some(ranks.len() as u64),
            launch_omp_num_threads: None,
            host_cpus: Some(8),
            cpu_quota: None,
            ranks,
        }
    }

    #[test]
    fn lists_and_limits_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_max("max 100000\n"), Some(None));
        assert_eq!(parse_cpu_max("150000 100000"), Some(Some(1.5)));
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(
            path_of(Path::new("/r/train.log.gz")),
            PathBuf::from("/r/train.launch.json")
        );
    }

    #[test]
    fn torchruns_silent_one_thread_costs_the_cores_left_idle() {
        // 2 ranks on 8 CPUs, each pinned to 4, OMP_NUM_THREADS=1 from torchrun: 4 CPUs per
        // rank, 1 used — up to 4× on the oneDNN time.
        let l = torchrun(vec![rank(0, Some("1"), "0-3"), rank(1, Some("1"), "4-7")]);
        let c = costs(&l, Some(1));
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].what, c[0].speedup), ("omp-default", Some(4.0)));
        assert!(c[0]
            .sentence
            .contains("1 thread with 4 CPUs of its own (8 usable / 2 ranks)"));
        assert!(c[0].action.contains("OMP_NUM_THREADS=4"));
        // Set by the user (even to 1): not torchrun's doing.
        let user = Launch {
            launch_omp_num_threads: Some("1".into()),
            ..l.clone()
        };
        assert!(costs(&user, Some(1)).is_empty());
    }

    #[test]
    fn a_cgroup_limit_below_the_host_count_is_priced_by_threads_over_cpus() {
        // A 2-CPU container on an 8-CPU host, 2 ranks × 4 threads (sized by the host): 8
        // threads on 2 CPUs, a quarter of a CPU each, up to 4× (and the 2 usable CPUs leave 1
        // per rank, so torchrun's default is not the problem here).
        let l = Launch {
            launch_omp_num_threads: Some("4".into()),
            cpu_quota: Some(2.0),
            ..torchrun(vec![rank(0, Some("4"), "0-3"), rank(1, Some("4"), "4-7")])
        };
        let c = costs(&l, None);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].what, c[0].speedup), ("cpu-quota", Some(4.0)));
        assert!(c[0].sentence.contains("2 ranks × 4 threads = 8 threads"));
        assert!(c[0].sentence.contains("about 0.25 of a CPU"));
        // Within the limit: nothing.
        let fits = Launch {
            cpu_quota: Some(8.0),
            ..l
        };
        assert!(costs(&fits, None).is_empty());
    }

    #[test]
    fn ranks_sharing_every_cpu_are_unpinned() {
        // 2 ranks × 2 threads, both allowed on CPUs 0-3 (torchrun does not pin): overlap.
        let l = Launch {
            launch_omp_num_threads: Some("2".into()),
            ..torchrun(vec![rank(0, Some("2"), "0-3"), rank(1, Some("2"), "0-3")])
        };
        let c = costs(&l, None);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!((c[0].what, c[0].speedup), ("unpinned", None));
        assert!(c[0].sentence.contains("4 CPUs between them, 4 threads"));
        // 2 × 4 threads on the same 4 CPUs: 2× oversubscribed.
        let over = Launch {
            launch_omp_num_threads: Some("4".into()),
            ..torchrun(vec![rank(0, Some("4"), "0-3"), rank(1, Some("4"), "0-3")])
        };
        assert_eq!(costs(&over, None)[0].speedup, Some(2.0));
        // One rank: no launch finding at all.
        assert!(costs(&torchrun(vec![rank(0, Some("1"), "0-7")]), Some(1)).is_empty());
    }
}
