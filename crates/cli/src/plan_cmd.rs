//! `profilednn plan LOG --cores N [--sockets S]`: the splits of N cores into ranks × threads at
//! the log's global batch, each projected (one rank's iteration replayed at its threads and
//! mini-batch, plus the time outside oneDNN carried from the log, plus the gradient all-reduce
//! at a measured Gloo rate), with the invalid ones and why.

use crate::output::outln;
use crate::ExitCode;
use crate::{plan_logged, plan_step};
use anyhow::{bail, Context, Result};
use clap::Args;
use profilednn_dnnl::sequence::SequenceTiming;
use profilednn_dnnl::{Quiet, Replayer, Session, Steady};
use profilednn_machine::MachineProfile;
use profilednn_project::plan::{self, Outside, Plan, Target};
use std::path::PathBuf;

#[derive(Args)]
pub struct PlanArgs {
    /// The oneDNN verbose log of the training run (plain or gzip; a file: it is read twice).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Cores to split into ranks × threads (on each node, with `--nodes`).
    #[arg(long, value_parser = crate::load::count)]
    cores: u64,
    /// Nodes of `--cores` cores each, every one running the split: the global batch is divided
    /// among nodes × ranks, and the all-reduce crosses the network (`--network-gbps`).
    #[arg(long, value_parser = crate::load::count, default_value_t = 1)]
    nodes: u64,
    /// The link between two nodes, Gbit/s each way (e.g. 10 for 10GbE; `bench/gloo_allreduce.py`
    /// over several nodes prints what Gloo gets of it). Required with `--nodes` > 1, unless
    /// `--network-log` measures it.
    #[arg(long, value_name = "GBIT", conflicts_with = "network_log")]
    network_gbps: Option<f64>,
    /// The logs of a multi-node run of the same training, one per node (as `record --ranks`
    /// wrote them on each node, or each node's torchrun output): its time outside oneDNN per
    /// iteration less LOG's framework time is its all-reduce, which prices the network.
    #[arg(long, value_name = "NODE_LOG", num_args = 1..)]
    network_log: Vec<PathBuf>,
    /// Sockets the cores are in (equal shares): splits with a rank across two are invalid.
    /// Default: the `sockets` of `--machine`, else 1.
    #[arg(long, value_parser = crate::load::count)]
    sockets: Option<u64>,
    /// Ranks that ran the logged training, for one rank's log cut out of a multi-rank run (the
    /// global batch is its mini-batch × this). A log with launcher labels (`[default0]:`, …)
    /// or a torchrun `--log-dir` tree gives its ranks itself.
    #[arg(long, value_parser = crate::load::count)]
    log_ranks: Option<u64>,
    /// The all-reduce rate, GB/s per rank (ring bytes / time), e.g. from
    /// `bench/gloo_allreduce.py` on the target node. Default: the `--allreduce-log`
    /// measurement, else 0.6 (Gloo over TCP loopback on a 2-vCPU Xeon), stated in the output.
    #[arg(long, value_name = "GBPS", conflicts_with = "allreduce_log")]
    allreduce_gbps: Option<f64>,
    /// A multi-rank log of the same training (with timestamps): its time outside oneDNN per
    /// iteration less LOG's (a single-rank log) is the all-reduce, which prices it.
    #[arg(long, value_name = "MULTI_RANK_LOG")]
    allreduce_log: Option<PathBuf>,
    /// Machine profile (`profilednn peak`): its `sockets` when `--sockets` is not given.
    #[arg(long, value_name = "PROFILE.json")]
    machine: Option<PathBuf>,
    /// `table` or `json` (`profilednn.plan.v2`, docs/projection.md).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only the splits, their validity, outside, all-reduce and memory figures: no oneDNN
    /// replay.
    #[arg(long, visible_alias = "no-replay")]
    dry_run: bool,
    /// The PyTorch trace recorded with LOG (`record --torch`, one process): each split's rank
    /// replays the trace's steady iteration through PyTorch at its threads and mini-batch, so
    /// the framework ops count (a transformer's f32 GEMMs and attention run outside oneDNN);
    /// the batch and the gradients are the trace's.
    #[arg(long, value_name = "TRACE")]
    torch_trace: Option<PathBuf>,
    /// The Python that replays the framework ops (default: $PROFILEDNN_TORCH_PYTHON, the running
    /// interpreter, then python3).
    #[arg(long, value_name = "PATH", requires = "torch_trace")]
    python: Option<PathBuf>,
    /// oneDNN library to load (as for `replay`).
    #[arg(long, value_name = "PATH")]
    dnnl_lib: Option<PathBuf>,
    /// Untimed iterations before each split's timed ones.
    #[arg(long, default_value_t = SequenceTiming::default().warmup)]
    warmup: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if args.log.as_os_str() == "-" {
        bail!("plan reads the log twice, so it needs a file, not stdin: save the log to a file");
    }
    let machine = args
        .machine
        .as_deref()
        .map(MachineProfile::load)
        .transpose()?;
    let sockets = args
        .sockets
        .or(machine.as_ref().and_then(|m| m.sockets))
        .unwrap_or(1);
    if !args.cores.is_multiple_of(sockets) {
        bail!(
            "--cores {} is not divisible by {sockets} sockets: give the cores of whole sockets (--sockets)",
            args.cores
        );
    }
    let step = args
        .torch_trace
        .as_deref()
        .map(plan_step::read)
        .transpose()?;
    let logged = plan_logged::read(&args.log, args.log_ranks, step.as_ref().map(|s| s.batch))?;
    if step.is_some() && logged.rank_batches.len() > 1 {
        bail!(
            "--torch-trace plans from one process's run: {} holds {} ranks, whose trace times \
             hold their all-reduce; record the training as a single process (`profilednn record \
             --torch`)",
            args.log.display(),
            logged.rank_batches.len()
        );
    }
    let mut footprint = plan::footprint::of_iteration(&logged.steady.calls).with_context(|| {
        format!(
            "{}: steady-state iteration ({})",
            args.log.display(),
            logged.steady.from
        )
    })?;
    if let Some(s) = &step {
        footprint.gradient_bytes = s.gradients.bytes;
    }
    // A log without a thread count in its header ran on the planned cores (of one node), ranks
    // sharing them.
    let default_threads = (args.cores / logged.rank_batches.len() as u64).max(1);
    let outside = logged.outside(default_threads);
    let (allreduce_gbps, allreduce_source) =
        allreduce_rate(&args, &logged, outside.as_ref(), footprint.gradient_bytes)?;
    let measured = network_rate(
        &args,
        &logged,
        outside.as_ref(),
        footprint.gradient_bytes,
        allreduce_gbps,
    )?;
    let network_gbps = args.network_gbps.or(measured.as_ref().map(|m| m.0));
    let network_gbit = match (args.nodes, network_gbps) {
        (_, Some(g)) if !(g.is_finite() && g > 0.0) => {
            bail!("--network-gbps {g}: give a positive rate in Gbit/s")
        }
        (1, _) => None,
        (n, None) => bail!(
            "--nodes {n}: the all-reduce crosses the network between the nodes; give its rate, \
             --network-gbps GBIT (Gbit/s each way: 10 for 10GbE; `bench/gloo_allreduce.py` run \
             on the nodes measures what Gloo gets)"
        ),
        (_, g) => g,
    };
    let target = Target {
        cores: args.cores,
        sockets,
        allreduce_gbps,
        allreduce_source,
        nodes: args.nodes,
        network_gbit,
        network_source: network_gbit.map(|_| {
            measured
                .map(|m| m.1)
                .unwrap_or_else(|| "--network-gbps".to_string())
        }),
    };
    let mut plan = plan::skeleton(
        &args.log.display().to_string(),
        &target,
        &logged.rank_batches,
        footprint,
        if step.is_some() { None } else { outside },
    )
    .map_err(anyhow::Error::msg)?;
    if let Some(s) = &step {
        plan.as_whole_step(plan_step::whole_step(s));
    }
    plan.assumptions.insert(
        0,
        format!(
            "the iteration: {}, {} calls",
            logged.steady.from,
            logged.steady.calls.len()
        ),
    );
    match (&step, args.dry_run) {
        (_, true) => {}
        (Some(s), false) => plan_step::replay_rows(&mut plan, args.python.as_deref(), s)?,
        (None, false) => replay_rows(&args, &mut plan, &logged.steady, logged.threads)?,
    }
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&plan)?),
        Format::Table => crate::output::write(None, profilednn_report::plan_table::render(&plan))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The all-reduce rate and where it came from: `--allreduce-gbps`, the `--allreduce-log`
/// measurement, or the default — never the memory bandwidth (Gloo goes through sockets).
fn allreduce_rate(
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
fn network_rate(
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

/// Replays one rank of every valid split, fewest threads last (the order does not matter to
/// oneDNN: primitives are created afresh at each thread count).
fn replay_rows(
    args: &PlanArgs,
    plan: &mut Plan,
    steady: &Steady,
    log_threads: Option<u64>,
) -> Result<()> {
    let session = Session::open(args.dnnl_lib.as_deref()).map_err(|e| {
        anyhow::anyhow!("{e} (`--dry-run` plans without oneDNN: splits, all-reduce and memory)")
    })?;
    let replayer = Replayer::new(&session, &Quiet);
    let timing = SequenceTiming {
        warmup: args.warmup,
        ..Default::default()
    };
    // The heap the log shows, as `replay` reads it: every split runs in the same framework.
    let logged = replayer.heap(&args.log, steady, log_threads, &timing);
    // A split other than the logged one (its threads and mini-batch) is another run of the
    // training: its gradients' copies do not inherit this run's heap accident.
    let (another, another_why) = logged.another_run(steady);
    if let (Some(h), Some(why)) = (logged.timing.heap, &logged.why) {
        plan.assumptions
            .push(format!("per-call buffers: heap {} ({why})", h.as_str()));
        if let (Some(note), Some(h)) = (another_why, another.timing.heap) {
            plan.assumptions.push(format!(
                "per-call buffers of the splits other than the logged one: heap {} ({note})",
                h.as_str()
            ));
        }
    }
    let logged_batch = plan.logged_batch;
    // A log without a thread count ran on the planned cores, its ranks sharing them (as the
    // plan's time outside oneDNN assumes).
    let threads_without_nthr = (args.cores / plan.logged_ranks.max(1)).max(1);
    let todo = plan.to_replay();
    for (split, threads, batch) in todo {
        eprintln!("profilednn: replaying split {split}: {threads} thread(s), mini-batch {batch}");
        let logged_split = batch == logged_batch
            && !profilednn_dnnl::heap_choice::is_another_run(
                false,
                Some(threads),
                log_threads.or(Some(threads_without_nthr)),
            );
        let heap = if logged_split { &logged } else { &another };
        match replayer.rank(steady, threads, batch, &heap.timing) {
            Ok(r) => {
                plan.set_compute(&split, r.onednn_ms);
                if r.not_replayed > 0 {
                    plan.note(
                        &split,
                        format!(
                            "{} of {} problems not replayed (not in compute)",
                            r.not_replayed, r.problems
                        ),
                    );
                }
            }
            Err(e) => plan.note(&split, format!("not replayed: {e}")),
        }
    }
    Ok(())
}
