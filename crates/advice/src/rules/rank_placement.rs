//! `rank-thread-placement`: how the ranks' threads cover the machine's cores.
//!
//! Oversubscription (more threads than cores) is `thread-oversubscription`; this rule covers the
//! other ways a multi-rank split goes wrong: ranks with different thread counts (one rank
//! computes slower whatever its batch), and ranks that together leave cores idle.

use super::*;

pub const ID: &str = "rank-thread-placement";

pub fn check(ev: &Evidence, _t: &Thresholds) -> Result<Finding, String> {
    let ranks = ev.ranks;
    if ranks < 2 {
        return Err("a single rank (not applicable)".into());
    }
    // Each rank's header names its runtime and threads; merged, the distinct ones remain.
    let cpu: Vec<&String> = ev
        .profile
        .metadata
        .runtimes
        .iter()
        .filter(|r| r.starts_with("cpu"))
        .collect();
    let Some(nthr) = ev.profile.metadata.threads else {
        return Err("the logs have no thread count header (nthr) (not applicable)".into());
    };
    let total = nthr as usize * ranks;
    let (title, action) = if cpu.len() > 1 {
        (
            format!(
                "the {ranks} ranks run with different thread counts ({})",
                cpu.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            "Give every rank the same number of threads (OMP_NUM_THREADS = cores / ranks for \
             all of them) and its own cores (`OMP_PROC_BIND=close OMP_PLACES=cores`, or \
             `numactl --physcpubind` per rank): the rank with fewer threads becomes the \
             straggler every other rank waits for.",
        )
    } else {
        let Some(cores) = ev.cores else {
            return Err(format!(
                "{ranks} ranks × {nthr} threads = {total}, but the machine's core count is unknown (pass --cores N or a machine profile)"
            ));
        };
        if total > cores {
            return Err(format!(
                "{ranks} ranks × {nthr} threads = {total} > {cores} cores: see thread-oversubscription"
            ));
        }
        if total * 2 > cores {
            return Err(format!(
                "{ranks} ranks × {nthr} threads = {total} of {cores} cores"
            ));
        }
        (
            format!("{ranks} ranks × {nthr} threads use {total} of the machine's {cores} cores"),
            "Half the cores or more are idle: split all cores between the ranks \
             (OMP_NUM_THREADS = cores / ranks), one thread per physical core, with no rank \
             spanning sockets (one or more ranks per socket, bound with `numactl \
             --cpunodebind=N --membind=N`).",
        )
    };
    Ok(finding(
        ev,
        ID,
        title,
        map(vec![
            ("ranks", json!(ranks)),
            ("threads_per_rank", json!(nthr)),
            ("total_threads", json!(total)),
            ("cores", json!(ev.cores)),
            ("runtimes", json!(cpu)),
        ]),
        None,
        "not estimable from the log",
        action,
    ))
}
