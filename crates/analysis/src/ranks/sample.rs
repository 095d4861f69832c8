//! How the ranks of `record --ranks` were launched, read from their own processes while they
//! run (their environment and affinity masks under /proc) and from the launching environment
//! (the cgroup's CPU limit, the host's CPUs). What the facts cost is decided in [`super::launch`];
//! this module only gathers them.

use super::launch::{parse_cpu_list, parse_cpu_max, Launch, RankLaunch, SCHEMA};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the launching environment and the command say, before any rank runs; `host_cpus`: the
/// CPUs online (the caller asks the OS: this crate has no unsafe code).
pub fn launching(
    command: &[OsString],
    env: impl Fn(&str) -> Option<String>,
    host_cpus: Option<u64>,
) -> Launch {
    let (launcher, per_node) = super::launcher::launcher_of(command);
    Launch {
        schema: SCHEMA.into(),
        launcher,
        ranks_per_node: per_node,
        launch_omp_num_threads: env("OMP_NUM_THREADS"),
        host_cpus,
        cpu_quota: cgroup_quota(),
        ranks: Vec::new(),
    }
}

/// The tightest CPU limit of this process's cgroup and its ancestors (v2 `cpu.max`, else v1
/// `cpu.cfs_quota_us`); none without a limit.
fn cgroup_quota() -> Option<f64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let mut dir = std::path::PathBuf::from(format!("/sys/fs/cgroup{path}"));
    let mut best: Option<f64> = None;
    loop {
        let limit = std::fs::read_to_string(dir.join("cpu.max"))
            .ok()
            .and_then(|t| parse_cpu_max(&t))
            .flatten();
        best = match (best, limit) {
            (Some(b), Some(l)) => Some(b.min(l)),
            (b, l) => b.or(l),
        };
        if dir.as_os_str() == "/sys/fs/cgroup" || !dir.pop() {
            break;
        }
    }
    best.or_else(|| {
        let q: f64 = read_trim("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")?
            .parse()
            .ok()?;
        let p: f64 = read_trim("/sys/fs/cgroup/cpu/cpu.cfs_period_us")?
            .parse()
            .ok()?;
        (q > 0.0 && p > 0.0).then(|| q / p)
    })
}

fn read_trim(path: &str) -> Option<String> {
    Some(std::fs::read_to_string(path).ok()?.trim().to_string())
}

/// Samples the ranks among the descendants of a process while it runs.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeMap<u32, RankLaunch>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling the descendants of `root` every 200 ms.
    pub fn start(root: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeMap::new()));
        let (s, m) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                for (rank, r) in ranks_under(root) {
                    m.lock().unwrap().insert(rank, r);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Sampler {
            stop,
            seen,
            thread: Some(thread),
        }
    }
}

impl Sampler {
    /// Stops sampling: the ranks seen, in rank order (the last sample of each).
    pub fn finish(mut self) -> Vec<RankLaunch> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let seen = std::mem::take(&mut *self.seen.lock().unwrap());
        seen.into_values().collect()
    }
}

/// The rank processes at or under `root` (`record` run inside a rank starts the rank itself):
/// per rank, the lowest pid carrying it (a rank's data-loader
/// workers inherit its environment).
fn ranks_under(root: u32) -> BTreeMap<u32, RankLaunch> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    let mut parent = BTreeMap::new();
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // `pid (comm) state ppid …`: the comm may hold spaces and parentheses.
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(p) = ppid {
            parent.insert(pid, p);
        }
    }
    let under = |mut p: u32| {
        while let Some(&q) = parent.get(&p) {
            if q == root {
                return true;
            }
            p = q;
        }
        false
    };
    let mut out = BTreeMap::new();
    for &pid in parent.keys().filter(|p| **p == root || under(**p)) {
        if let Some((rank, r)) = rank_process(pid) {
            out.entry(rank).or_insert(r);
        }
    }
    out
}

/// A rank's process: its rank, OMP_NUM_THREADS and affinity; `None` for a process that is not
/// a rank (the launcher's agent) or has exited.
fn rank_process(pid: u32) -> Option<(u32, RankLaunch)> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let var = |k: &str| {
        environ
            .split(|b| *b == 0)
            .find_map(|kv| kv.strip_prefix(format!("{k}=").as_bytes()))
            .map(|v| String::from_utf8_lossy(v).into_owned())
    };
    let rank: u32 = ["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|k| var(k)?.trim().parse().ok())?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_list)
        .unwrap_or_default();
    Some((
        rank,
        RankLaunch {
            rank: Some(rank),
            omp_num_threads: var("OMP_NUM_THREADS"),
            cpus,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_started_here_is_sampled_with_its_environment_and_affinity() {
        // A child with RANK=3 and OMP_NUM_THREADS=2 in its environment, as a launcher starts
        // a rank; its affinity is this process's (inherited).
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .env("RANK", "3")
            .env("OMP_NUM_THREADS", "2")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let mut found = None;
        for _ in 0..50 {
            found = ranks_under(me).remove(&3);
            if found.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let r = found.expect("the child is seen as rank 3");
        assert_eq!(r.omp_num_threads.as_deref(), Some("2"));
        let own = std::fs::read_to_string("/proc/self/status").unwrap();
        let mine = own
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(parse_cpu_list)
            .unwrap();
        assert_eq!(r.cpus, mine);
    }
}
