//! `time-outside-onednn`: the timestamps show oneDNN idle most of the time.

use super::*;

pub const ID: &str = "time-outside-onednn";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let Some(wall) = ev.summary.wall_span_ms.filter(|w| *w > 0.0) else {
        return Err(
            "the log has no timestamps (not applicable; record with ONEDNN_VERBOSE_TIMESTAMP=1)"
                .into(),
        );
    };
    let busy = ev.summary.total_time_ms / wall / ev.ranks.max(1) as f64;
    if busy >= t.busy_share {
        return Err(format!(
            "oneDNN is busy {} of the timestamps' span (threshold {})",
            pct(busy),
            pct(t.busy_share)
        ));
    }
    let outside = (wall - ev.summary.total_time_ms / ev.ranks.max(1) as f64).max(0.0);
    Ok(finding(
        ev,
        ID,
        format!(
            "oneDNN is busy only {} of the {wall:.1} ms the log spans: {outside:.1} ms run outside oneDNN",
            pct(busy)
        ),
        map(vec![
            ("wall_span_ms", json!(wall)),
            ("onednn_ms", json!(ev.summary.total_time_ms)),
            ("busy_share", json!(busy)),
            ("outside_ms", json!(outside)),
        ]),
        None,
        "not estimable from a oneDNN log: the time is spent in code it does not see",
        "Most time is outside oneDNN: framework element-wise ops (losses, optimizers, frozen \
         batch-norm as mul/add), data loading, Python. Profile the framework side \
         (`torch.profiler`), give the data loader workers (`num_workers`), and replace op chains \
         by fused kernels (focal loss, optimizers) or `torch.compile`.",
    ))
}
