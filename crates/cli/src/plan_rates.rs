//! The rates of `plan`'s all-reduce: inside a node (`--allreduce-gbps`, measured from
//! `--allreduce-log`, or the default) and between nodes (`--network-gbps`, or measured from
//! `--network-log`), each with where it came from — for the plan's assumptions.

use crate::plan_args::PlanArgs;
use crate::plan_logged;
use anyhow::{bail, Context, Result};
use profilednn_project::plan::{self, Outside};

/// The all-reduce rate and where it came from: `--allreduce-gbps`, the `--allreduce-log`
/// measurement, or the default — never the memory bandwidth (Gloo goes through sockets).
pub fn allreduce_rate(
    args: &PlanArgs,
    logged: &plan_logged::Logged,
    outside: Option<&Outside>,
    gradient_bytes: u64,
) -> Result<(f64, String)> {
    if let Some(g) = args.allreduce_gbps {
        if !(g.is_finite() && g > 0.0) {
            bail!("--allreduce-gbps {g}: give a positive rate in GB/s per rank");
        }
        return Ok((g, "--allreduce-gbps".into()));
    }
    let Some(multi_path) = &args.allreduce_log else {
        return Ok((
            plan::allreduce::DEFAULT_GBPS,
            "assumed default: Gloo over TCP loopback, 2 ranks on a 2-vCPU Xeon, by bench/gloo_allreduce.py; run it on your node and give --allreduce-gbps, or --allreduce-log a multi-rank log of this training".into(),
        ));
    };
    let no_time = |p: &std::path::Path| {
        anyhow::anyhow!(
            "{}: no time outside oneDNN per iteration (record with ONEDNN_VERBOSE_TIMESTAMP=1 and iteration markers), so the all-reduce cannot be measured; give --allreduce-gbps",
            p.display()
        )
    };
    if logged.rank_batches.len() > 1 {
        bail!(
            "--allreduce-log measures the all-reduce against a single-rank LOG; {} has {} ranks: plan the single-rank log of the same training, or give --allreduce-gbps",
            args.log.display(),
            logged.rank_batches.len()
        );
    }
    let single = outside.ok_or_else(|| no_time(&args.log))?;
    let multi = plan_logged::read(multi_path, None, None)?;
    let ranks = multi.rank_batches.len() as u64;
    let multi_outside = multi
        .outside((args.cores / ranks).max(1))
        .ok_or_else(|| no_time(multi_path))?;
    let m = plan::rate::from_runs(single, &multi_outside, ranks, gradient_bytes)
        .with_context(|| format!("--allreduce-log {}", multi_path.display()))?;
    Ok((
        m.gbps,
        format!(
            "measured: {} ({} ranks) spends {:.1} ms per iteration outside oneDNN, the single-rank log {:.1} ms at its {} samples per thread: {:.1} ms of all-reduce",
            multi_path.display(),
            ranks,
            m.multi_outside_ms,
            m.single_outside_ms,
            multi_outside.logged_batch / multi_outside.logged_threads.max(1),
            m.exposed_ms
        ),
    ))
}

/// The network rate measured from `--network-log`, and how (none without it).
pub fn network_rate(
    args: &PlanArgs,
    logged: &plan_logged::Logged,
    outside: Option<&Outside>,
    gradient_bytes: u64,
    intra_gbps: f64,
) -> Result<Option<(f64, String)>> {
    if args.network_log.is_empty() {
        return Ok(None);
    }
    let no_time = |p: &std::path::Path| {
        anyhow::anyhow!(
            "{}: no time outside oneDNN per iteration (record with ONEDNN_VERBOSE_TIMESTAMP=1 and iteration markers), so the network cannot be measured; give --network-gbps",
            p.display()
        )
    };
    // The planned log's framework time: its own all-reduce (on one node) taken out.
    let single = Outside {
        logged_allreduce_ms: plan::allreduce::ms(
            gradient_bytes,
            logged.rank_batches.len() as u64,
            intra_gbps,
        )
        .unwrap_or(0.0),
        ..outside.ok_or_else(|| no_time(&args.log))?.clone()
    };
    let nodes: Vec<plan_logged::Logged> = args
        .network_log
        .iter()
        .map(|p| plan_logged::read(p, None, None))
        .collect::<Result<_>>()?;
    let per_node = nodes[0].rank_batches.len() as u64;
    if let Some((p, n)) = args
        .network_log
        .iter()
        .zip(&nodes)
        .find(|(_, n)| n.rank_batches.len() as u64 != per_node)
    {
        bail!(
            "--network-log: {} holds {} ranks, {} holds {per_node}: give one log per node of one run",
            p.display(),
            n.rank_batches.len(),
            args.network_log[0].display()
        );
    }
    let all = plan_logged::Logged::of_nodes(nodes);
    let multi = all
        .outside((args.cores / per_node).max(1))
        .ok_or_else(|| no_time(&args.network_log[0]))?;
    let n = args.network_log.len() as u64;
    let m =
        plan::rate::network_from_runs((&single, &multi), (n, per_node), gradient_bytes, intra_gbps)
            .context("--network-log")?;
    Ok(Some((
        m.gbit,
        format!(
            "measured: the {n} nodes × {per_node} rank(s) of --network-log spend {:.1} ms per iteration outside oneDNN, the planned log's framework time is {:.1} ms at their samples per thread: {:.1} ms of all-reduce",
            m.multi_outside_ms, m.single_outside_ms, m.exposed_ms
        ),
    )))
}
