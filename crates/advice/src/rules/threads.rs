//! `thread-oversubscription`: oneDNN threads against the machine's cores.

use super::*;

pub const ID: &str = "thread-oversubscription";

pub fn check(ev: &Evidence, _t: &Thresholds) -> Result<Finding, String> {
    let Some(nthr) = ev.profile.metadata.threads else {
        return Err("the log has no thread count header (nthr) (not applicable)".into());
    };
    let Some(cores) = ev.cores else {
        return Err(match ev.cores_unknown {
            // Another machine's cores say nothing of the log's threads.
            Some(why) => format!("nthr:{nthr} per rank, but {why} (not applicable)"),
            None => format!(
                "nthr:{nthr} per rank, but the machine's core count is unknown (pass --cores N or a machine profile)"
            ),
        });
    };
    let from = ev.cores_from.map_or(String::new(), |f| format!(" ({f})"));
    let ranks = ev.ranks.max(1);
    let used = nthr as usize * ranks;
    let (title, action) = if used > cores {
        (
            format!(
                "{ranks} rank(s) x {nthr} oneDNN threads = {used} on {cores} cores{from}: oversubscribed"
            ),
            "Give each rank its own cores: OMP_NUM_THREADS = cores / ranks, bind each rank to its \
             socket or core range (`numactl --cpunodebind=N --membind=N`, or \
             `OMP_PROC_BIND=close OMP_PLACES=cores`), and keep one rank per socket so no rank's \
             threads span sockets.",
        )
    } else if ranks == 1 && (nthr as usize) * 2 <= cores {
        (
            format!("oneDNN uses {nthr} threads on a {cores}-core machine{from}"),
            "Half the cores or more are idle: set OMP_NUM_THREADS to the physical cores (or run \
             one rank per socket with that many threads each).",
        )
    } else {
        return Err(format!(
            "{ranks} rank(s) x {nthr} threads fit {cores} cores{from}"
        ));
    };
    Ok(finding(
        ev,
        ID,
        title,
        map(vec![
            ("threads_per_rank", json!(nthr)),
            ("ranks", json!(ranks)),
            ("cores", json!(cores)),
            ("cores_from", json!(ev.cores_from)),
        ]),
        None,
        "not estimable from the log",
        action,
    ))
}
