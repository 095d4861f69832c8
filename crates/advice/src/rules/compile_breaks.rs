//! `compile-graph-breaks`: what Dynamo could not take whole. A graph break ends a compiled
//! graph, runs the rest of the function eagerly up to a resume frame, and splits what Inductor
//! could have fused; a recompilation compiles a frame again in a later step (a guard failed: a
//! new shape, a new dtype), paid as the first compile was. Both come from Dynamo's own counters,
//! which `profilednn.profile` writes into the trace.

use super::*;

pub const ID: &str = "compile-graph-breaks";

pub fn check(ev: &Evidence, _: &Thresholds) -> Result<Finding, String> {
    let j = ev.torch.ok_or(
        "no PyTorch trace (record with `profilednn record --torch`, pass --torch-trace) (not applicable)",
    )?;
    let d = j
        .dynamo
        .as_ref()
        .ok_or("no compiled frame in the trace (an eager run, or recorded without profilednn.profile) (not applicable)")?;
    let (breaks, recompiles) = (d.breaks(), d.recompiles.len());
    if breaks == 0 && recompiles == 0 {
        return Err(format!(
            "{} frame(s) compiled whole: no graph break, no recompilation",
            d.frames
        ));
    }
    let mut title = Vec::new();
    if breaks > 0 {
        let first = d.graph_breaks.first().map_or("", |b| b.reason.as_str());
        title.push(format!(
            "torch.compile broke the graph {breaks} time(s) ({} resume frame(s)): {first}",
            d.resume_frames.len()
        ));
    }
    if recompiles > 0 {
        title.push(format!(
            "recompiled {recompiles} time(s): {}",
            d.recompiles[0].reason
        ));
    }
    Ok(finding(
        ev,
        ID,
        title.join("; "),
        map(vec![
            ("frames", json!(d.frames)),
            ("graph_breaks", json!(d.graph_breaks)),
            ("resume_frames", json!(d.resume_frames)),
            ("recompiles", json!(d.recompiles)),
        ]),
        None,
        "not estimable from one run: each break runs eager code between graphs, each \
         recompilation is another compile",
        "Remove what breaks the graph (`print`, `.item()`, data-dependent Python control flow: \
         TORCH_LOGS=graph_breaks lists them with their lines), or compile the parts between \
         the breaks on their own. For recompilations on a changing batch size, mark the \
         dimension dynamic (torch._dynamo.mark_dynamic) or compile with dynamic=True.",
    ))
}
