//! `profilednn plan LOG --cores N [--sockets S]`: the splits of N cores into ranks × threads at
//! the log's global batch, each projected (one rank's iteration replayed at its threads and
//! mini-batch, plus the time outside oneDNN carried from the log, plus the gradient all-reduce
//! at a measured Gloo rate), with the invalid ones and why.

use crate::output::outln;
pub use crate::plan_args::{Format, PlanArgs};
use crate::ExitCode;
use anyhow::{bail, Result};
use profilednn_project::plan::{build, measured, torch_step};

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if args.log.as_os_str() == "-" {
        bail!("plan reads the log twice, so it needs a file, not stdin: save the log to a file");
    }
    let machine = args
        .machine
        .as_deref()
        .map(profilednn_project::machine_file::read)
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
    let req = build::Request {
        log: &args.log,
        log_ranks: args.log_ranks,
        torch_trace: args.torch_trace.as_deref(),
        given: measured::Given {
            cores: args.cores,
            sockets,
            nodes: args.nodes,
            allreduce_gbps: args.allreduce_gbps,
            allreduce_log: args.allreduce_log.as_deref(),
            network_gbps: args.network_gbps,
            network_log: &args.network_log,
        },
    };
    let build::Planned {
        mut plan,
        logged,
        step,
    } = build::plan(&req)?;
    for w in &plan.warnings {
        eprintln!("profilednn plan: warning: {w}");
    }
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
        _ => crate::output::write(None, profilednn_report::plan_table::render(&plan))?,
    }
    Ok(ExitCode::SUCCESS)
}
