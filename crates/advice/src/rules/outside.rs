//! `time-outside-onednn`: the timestamps show oneDNN idle most of the time.

use super::*;

pub const ID: &str = "time-outside-onednn";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    // The log's timestamps span the run; a log without a primitive has none, and then the
    // PyTorch trace's iterations do.
    let Some(wall) = ev
        .summary
        .wall_span_ms
        .filter(|w| *w > 0.0)
        .or_else(|| trace_span(ev))
    else {
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
    let mut evidence = vec![
        ("wall_span_ms", json!(wall)),
        ("onednn_ms", json!(ev.summary.total_time_ms)),
        ("busy_share", json!(busy)),
        ("outside_ms", json!(outside)),
    ];
    let mut title = format!(
        "oneDNN is busy only {} of the {wall:.1} ms the log spans: {outside:.1} ms run outside oneDNN",
        pct(busy)
    );
    let mut compiled = false;
    if let Some(j) = ev.torch {
        // What the outside time is, from the PyTorch trace: the framework's own work by where it
        // runs, and the phases oneDNN never sees.
        let parts = outside_parts(j);
        if !parts.is_empty() {
            let text: Vec<String> = parts
                .iter()
                .map(|(k, ms)| format!("{k} {ms:.1} ms"))
                .collect();
            title += &format!(" (in the PyTorch trace: {})", text.join(", "));
            evidence.push((
                "outside_by_kind",
                json!(parts
                    .iter()
                    .map(|(k, ms)| json!({"kind": k, "ms": ms}))
                    .collect::<Vec<_>>()),
            ));
        }
        compiled = j.ops.iter().any(|o| {
            o.name.starts_with("Torch-Compiled Region") || o.name.contains("CompiledFunction")
        });
    }
    let action = if compiled {
        "Most time is outside oneDNN, and the model is already compiled (torch.compile): look at \
         what the trace puts outside the compiled regions (the optimizer's op chains: `fused=True` \
         or ProfileDNN's fused optimizers; the loss; data loading: `num_workers`), and at the \
         compiled regions' own time against their roofline."
    } else {
        "Most time is outside oneDNN: framework element-wise ops (losses, optimizers, frozen \
         batch-norm as mul/add), f32 GEMMs in the BLAS and attention in ATen, data loading, \
         Python. Profile the framework side (`profilednn record --torch`), give the data loader \
         workers (`num_workers`), and replace op chains by fused kernels (focal loss, \
         optimizers) or `torch.compile`."
    };
    Ok(finding(
        ev,
        ID,
        title,
        map(evidence),
        None,
        "not estimable from a oneDNN log: the time is spent in code it does not see",
        action,
    ))
}

/// The framework's work by where it runs (costed ops: GEMMs in the BLAS, attention,
/// element-wise and normalization in ATen) and the data phase, largest first, in ms over the
/// trace; empty when the trace gives nothing.
fn outside_parts(j: &profilednn_torchtrace::TorchJoin) -> Vec<(&'static str, f64)> {
    let mut parts: Vec<(&'static str, f64)> = Vec::new();
    let mut add = |k: &'static str, ms: f64| {
        if ms > 0.0 {
            match parts.iter_mut().find(|(x, _)| *x == k) {
                Some(p) => p.1 += ms,
                None => parts.push((k, ms)),
            }
        }
    };
    for r in j.framework.rows.iter().filter(|r| r.costed_calls > 0) {
        let outside = (r.time_ms - r.onednn_ms).max(0.0);
        match (r.family, r.runs_in) {
            (Some("gemm"), "BLAS") => add("GEMMs in the BLAS", outside),
            (Some("attention"), _) => add("attention in ATen", outside),
            (Some("gemm"), _) => add("around oneDNN's GEMMs (casts, dispatch)", outside),
            _ => add("element-wise and normalization ops in ATen", outside),
        }
    }
    // The optimizer's ops are among the element-wise ones above; data loading is apart. (A
    // phase's own row is named after it: matching its `phase`, empty on such rows, found none.)
    for p in j
        .phases
        .iter()
        .filter(|p| p.name == profilednn_torchtrace::Phase::Data.as_str())
    {
        add("data loading", p.outside_ms);
    }
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    parts
}
