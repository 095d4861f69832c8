//! `profilednn plan`'s table: the splits of the cores into ranks × threads, each with its
//! projected iteration, and what the projection assumed.

use profilednn_project::plan::{to_target::PlanTarget, Plan};
use std::fmt::Write;

/// `writeln!` into a `String`, which cannot fail.
macro_rules! outln {
    ($out:expr, $($t:tt)*) => {{
        let _ = writeln!($out, $($t)*);
    }};
}

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1048576.0))
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The plan as a table: the target, the logged run, one row per split, the assumptions.
pub fn render(p: &Plan) -> String {
    let mut out = String::new();
    write_target(&mut out, p);
    match &p.to {
        Some(t) => write_to(&mut out, t),
        None => write_outside(&mut out, p),
    }
    if let (Some(net), true) = (p.network_gbps, p.nodes > 1) {
        outln!(
            out,
            "  {} nodes of {} cores, {net:.3} Gbit/s each way between them ({}): every split runs on each node (ranks = {} × the split's), Gloo's ring crosses the network; the notes say what the network adds to the all-reduce",
            p.nodes,
            p.cores,
            p.network_source.as_deref().unwrap_or("given"),
            p.nodes
        );
    }
    if !p.replayed && p.to.is_none() {
        outln!(
            out,
            "  compute not replayed (--dry-run, or no split could be replayed)"
        );
    }
    write_table(&mut out, p);
    outln!(out, "\nAssumed:");
    for a in &p.assumptions {
        outln!(out, "  - {a}");
    }
    out
}

/// The target and the gradients' all-reduce: what every split is planned for.
fn write_target(out: &mut String, p: &Plan) {
    let batches: Vec<String> = p.logged_rank_batches.iter().map(u64::to_string).collect();
    outln!(
        out,
        "Plan for {}: {} cores in {} socket(s), global batch {} (the mini-batch of {} logged rank(s): {})",
        p.source,
        p.cores,
        p.sockets,
        p.global_batch,
        p.logged_ranks,
        batches.join(" + ")
    );
    outln!(
        out,
        "  gradients all-reduced per iteration: {:.2} MiB ({}); all-reduce priced at {:.3} GB/s per rank ({})",
        p.footprint.gradient_bytes as f64 / 1048576.0,
        match &p.whole_step {
            Some(w) => format!("{} parameters in the trace", w.gradient_tensors),
            None => format!("{} backward-weights calls", p.footprint.backward_weights_calls),
        },
        p.allreduce_gbps,
        p.allreduce_source
    );
}

/// `--to`: the machine every split was projected onto, and the band of its figures.
fn write_to(out: &mut String, t: &PlanTarget) {
    outln!(
        out,
        "  projected onto {} ({}, {} profile; the log's machine: {}): each split's rank is the log's steady step projected there at its threads (`project --to`), not replayed; compute and outside ±{:.0} % ({})",
        t.name,
        t.profile,
        t.profile_kind.replace('_', " "),
        t.source,
        t.band_relative * 100.0,
        t.band_basis
    );
    for e in &t.emulated {
        outln!(out, "  emulated there: {e}");
    }
}

/// What the time outside oneDNN is taken from (the whole step of a trace, the logged run's
/// iterations, or nothing), and the logged run's own split for comparison.
fn write_outside(out: &mut String, p: &Plan) {
    match (&p.outside, &p.whole_step) {
        (_, Some(w)) => outln!(
            out,
            "  whole step: {} iteration {} ({:.1} ms, recorded batch {}), every framework op replayed through {} per split; compute = the ops, outside = the time between them, carried over",
            w.trace,
            w.iteration,
            w.logged_step_ms,
            w.recorded_batch,
            w.torch.as_deref().unwrap_or("PyTorch")
        ),
        (o, None) => match o {
        Some(o) => outln!(
        out,
            "  outside oneDNN: {:.1} ms per iteration logged ({} steady iterations, {} thread(s), mini-batch {}{}), scaled by samples per thread",
            o.logged_ms,
            o.steady_iterations,
            o.logged_threads,
            o.logged_batch,
            if o.logged_allreduce_ms > 0.0 {
                format!(", less {:.1} ms of the logged ranks' all-reduce", o.logged_allreduce_ms)
            } else {
                String::new()
            }
        ),
        None => outln!(out, "  outside oneDNN: unknown (no timestamps or iteration markers): not in the total"),
        },
    }
    if let Some((o, onednn)) = p
        .outside
        .as_ref()
        .and_then(|o| Some((o, o.logged_onednn_ms?)))
    {
        outln!(
        out,
            "  the logged run ({}x{}): oneDNN {onednn:.1} + outside {:.1} = {:.1} ms per iteration (a replay of that split's compute should come near {onednn:.1})",
            p.logged_ranks,
            o.logged_threads,
            o.logged_ms,
            onednn + o.logged_ms
        );
    }
}

/// One row per split: its time, memory, relative throughput and notes.
fn write_table(out: &mut String, p: &Plan) {
    outln!(
        out,
        "\n{:<8} {:>5} {:>7} {:>9} {:>11} {:>11} {:>12} {:>10} {:>10} {:>8}  {}",
        "split",
        "ranks",
        "threads",
        "rank mb",
        "compute ms",
        "outside ms",
        "allreduce ms",
        "total ms",
        "mem MiB",
        "rel thr",
        "notes"
    );
    for r in &p.rows {
        let mut notes = r
            .invalid
            .iter()
            .map(|w| format!("INVALID: {w}"))
            .collect::<Vec<_>>();
        if let Some(n) = r.allreduce_network_ms.filter(|_| p.nodes > 1) {
            notes.push(format!("all-reduce: {n:.3} ms added by the network"));
        }
        notes.extend(r.notes.iter().cloned());
        outln!(
            out,
            "{:<8} {:>5} {:>7} {:>9} {:>11} {:>11} {:>12} {:>10} {:>10} {:>8}  {}",
            r.split,
            r.ranks,
            r.threads,
            r.per_rank_batch.map_or("-".into(), |b| b.to_string()),
            ms(r.compute_ms),
            ms(r.outside_ms),
            ms(r.allreduce_ms),
            ms(r.total_ms),
            mib(r.memory_bytes_per_rank),
            r.relative_throughput
                .map_or("-".into(), |x| format!("{x:.2}")),
            notes.join("; ")
        );
    }
}
