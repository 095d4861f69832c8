//! `profilednn plan LOG --cores N [--sockets S]`: the splits of N cores into ranks × threads at
//! the log's global batch, each projected (one rank's iteration replayed at its threads and
//! mini-batch, plus the time outside oneDNN carried from the log, plus the gradient all-reduce
//! at a measured Gloo rate), with the invalid ones and why. With `--to TARGET.json`, the splits
//! of a machine not at hand: each rank's step projected there (`project --to`'s method).

use crate::output::outln;
pub use crate::plan_args::{Format, PlanArgs};
use crate::ExitCode;
use anyhow::{bail, Context, Result};
use profilednn_project::plan::{build, measured, to_target, torch_step, Plan};
use profilednn_project::target::{source, Input, TargetProfile};

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if args.log.as_os_str() == "-" {
        bail!("plan reads the log twice, so it needs a file, not stdin: save the log to a file");
    }
    let to = args.to.as_deref().map(source::read_target).transpose()?;
    let machine = args
        .machine
        .as_deref()
        .map(profilednn_project::machine_file::read)
        .transpose()?;
    let on = to.as_ref().map(|t| &t.profile);
    let sockets = (args.sockets)
        .or(machine.as_ref().and_then(|m| m.sockets))
        .or(on.and_then(|m| m.sockets))
        .unwrap_or(1);
    let cores = (args.cores)
        .or(on.and_then(|m| m.threads.map(|t| t as u64)))
        .context("the target profile gives no `threads`: say how many cores it has (--cores)")?;
    if !cores.is_multiple_of(sockets) {
        bail!("--cores {cores} is not divisible by {sockets} sockets: give the cores of whole sockets (--sockets)");
    }
    let req = build::Request {
        log: &args.log,
        log_ranks: args.log_ranks,
        torch_trace: args.torch_trace.as_deref(),
        given: measured::Given {
            cores,
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
    match (&to, &step, args.dry_run) {
        (Some(t), _, _) => projected_rows(&args, &mut plan, t)?,
        (None, _, true) => {}
        (None, Some(s), false) => {
            torch_step::replay_rows(&mut plan, args.python.as_deref(), s, logged.verbose)
        }
        (None, None, false) => {
            crate::plan_replay::replay_rows(&args, &mut plan, &logged.steady, logged.threads)?
        }
    }
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&plan)?),
        _ => crate::output::write(None, profilednn_report::plan_table::render(&plan))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `--to`: every valid split's rank projected onto `target` from the log (and its trace).
fn projected_rows(args: &PlanArgs, plan: &mut Plan, target: &TargetProfile) -> Result<()> {
    let trace = args.torch_trace.as_deref();
    let profile = crate::load::profile_with(&args.log, None, None, true, trace.is_some())?;
    let source = source::source_of(args.from.as_deref(), &profile)?;
    let logged = profilednn_project::project::mismatch::logged_of(&args.log);
    let join = trace
        .map(|t| crate::load::torch_join_steady(t, &args.log))
        .transpose()?;
    let input = Input {
        profile: &profile,
        logged: logged.as_ref(),
        join: join.as_ref(),
    };
    to_target::fill(plan, &input, &source, target);
    Ok(())
}
