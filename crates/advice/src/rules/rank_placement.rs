//! `rank-thread-placement`: how the ranks' threads cover the machine's cores.
//!
//! Oversubscription (more threads than cores) is `thread-oversubscription`; this rule covers the
//! other ways a multi-rank split goes wrong: ranks with different thread counts (one rank
//! computes slower whatever its batch), a rank spanning sockets (when the machine's sockets are
//! known: its threads synchronise and read memory across the socket link), and ranks that
//! together leave cores idle.

use super::*;

pub const ID: &str = "rank-thread-placement";

pub fn check(ev: &Evidence, _t: &Thresholds) -> Result<Finding, String> {
    let ranks = ev.ranks;
    if ranks < 2 && ev.sockets.is_none_or(|s| s < 2) {
        return Err(
            "a single rank on a machine of one (or unknown) socket (not applicable)".into(),
        );
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
    let mut skipped = String::new();
    let (title, action) = if cpu.len() > 1 && ranks > 1 {
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
        // A rank spans sockets by the physical cores per socket (threads placed one per core,
        // `OMP_PLACES=cores`), never by hardware threads: 56 threads on 2 sockets × 28 cores
        // × 2 SMT span both. Unknown physical cores: the check is skipped, and said so.
        match (ev.sockets.filter(|s| *s >= 2), ev.physical_cores) {
            (Some(sockets), Some(physical)) => {
                if profilednn_machine::placement::rank_spans_sockets(
                    ranks as u64,
                    u64::from(nthr),
                    physical as u64,
                    sockets as u64,
                ) {
                    return Ok(spans_sockets(ev, ranks, nthr, physical, sockets, cpu));
                }
            }
            (Some(sockets), None) => {
                skipped = format!(
                    "whether a rank spans the {sockets} sockets is not checked: the machine's \
                     physical cores are unknown (the profile's {cores} hardware threads may \
                     count SMT siblings; pass --cores N of physical cores, or re-measure the \
                     profile with `profilednn peak`)"
                );
            }
            (None, _) => {}
        }
        if total * 2 > cores || ranks < 2 {
            let sep = if skipped.is_empty() { "" } else { "; " };
            return Err(format!(
                "{ranks} ranks × {nthr} threads = {total} of {cores} cores{sep}{skipped}"
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
            ("sockets", json!(ev.sockets)),
            ("physical_cores", json!(ev.physical_cores)),
            ("runtimes", json!(cpu)),
        ]),
        None,
        "not estimable from the log",
        &if skipped.is_empty() {
            action.to_string()
        } else {
            format!("{action} Note: {skipped}.")
        },
    ))
}

fn spans_sockets(
    ev: &Evidence,
    ranks: usize,
    nthr: u32,
    cores: usize,
    sockets: usize,
    cpu: Vec<&String>,
) -> Finding {
    let per_socket = cores / sockets;
    finding(
        ev,
        ID,
        format!(
            "{ranks} rank(s) × {nthr} threads on {cores} physical cores in {sockets} sockets ({per_socket} per socket): a rank spans sockets"
        ),
        map(vec![
            ("ranks", json!(ranks)),
            ("threads_per_rank", json!(nthr)),
            ("cores", json!(cores)),
            ("sockets", json!(sockets)),
            ("cores_per_socket", json!(per_socket)),
            ("runtimes", json!(cpu)),
        ]),
        None,
        "not estimable from the log",
        "Keep every rank inside one socket: a number of ranks that is a multiple of the \
         sockets, OMP_NUM_THREADS = cores / ranks dividing the cores per socket, each rank \
         bound to its socket (`numactl --cpunodebind=N --membind=N`, or `torchrun` with \
         `OMP_PROC_BIND=close OMP_PLACES=cores`); `profilednn plan LOG --cores N --sockets S` \
         lists the splits that fit.",
    )
}
