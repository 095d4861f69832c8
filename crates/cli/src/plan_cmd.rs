//! `profilednn plan LOG --cores N [--sockets S]`: the splits of N cores into ranks × threads at
//! the log's global batch, each projected (one rank's iteration replayed at its threads and
//! mini-batch, plus the time outside oneDNN carried from the log, plus the gradient all-reduce
//! at a measured Gloo rate), with the invalid ones and why.

use crate::output::outln;
pub use crate::plan_args::{Format, PlanArgs};
use crate::ExitCode;
use anyhow::{bail, Context, Result};
use profilednn_project::plan::{self, measured, torch_step};

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if args.log.as_os_str() == "-" {
        bail!("plan reads the log twice, so it needs a file, not stdin: save the log to a file");
    }
    let machine = args
        .machine
        .as_deref()
        .map(crate::machine_file::read)
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
        .map(|t| torch_step::read(t, &args.log))
        .transpose()?;
    let logged = profilednn_project::plan::logged::read(
        &args.log,
        args.log_ranks,
        step.as_ref().map(|s| s.batch),
    )?;
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
    let given = measured::Given {
        cores: args.cores,
        sockets,
        nodes: args.nodes,
        allreduce_gbps: args.allreduce_gbps,
        allreduce_log: args.allreduce_log.as_deref(),
        network_gbps: args.network_gbps,
        network_log: &args.network_log,
    };
    let this_log = (args.log.as_path(), &logged, outside.as_ref());
    let target = measured::target(&given, this_log, footprint.gradient_bytes)?;
    let mut plan = plan::skeleton(
        &args.log.display().to_string(),
        &target,
        &logged.rank_batches,
        footprint,
        if step.is_some() { None } else { outside },
    )
    .map_err(anyhow::Error::msg)?;
    for w in &plan.warnings {
        eprintln!("profilednn plan: warning: {w}");
    }
    if let Some(s) = &step {
        plan.as_whole_step(torch_step::whole_step(s));
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
        (Some(s), false) => {
            torch_step::replay_rows(&mut plan, args.python.as_deref(), s, logged.verbose)
        }
        (None, false) => {
            crate::plan_replay::replay_rows(&args, &mut plan, &logged.steady, logged.threads)?
        }
    }
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&plan)?),
        Format::Table => crate::output::write(None, profilednn_report::plan_table::render(&plan))?,
    }
    Ok(ExitCode::SUCCESS)
}
