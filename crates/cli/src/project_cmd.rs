//! `profilednn project LOG --replay RESULTS.json | --machine PROFILE.json | --to TARGET.json`.

use crate::format::Format;
use crate::output::outln;
use crate::ExitCode;
use anyhow::{bail, Result};
use clap::Args;
use profilednn_replay::Replay;
use std::path::PathBuf;

#[derive(Args)]
pub struct ProjectArgs {
    /// The oneDNN verbose log to project (plain or gzip; `-` reads stdin, without per-call medians).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Replay results of the target machine (`profilednn replay … -o RESULTS.json`).
    #[arg(long, value_name = "RESULTS.json")]
    replay: Option<PathBuf>,
    /// The PyTorch trace the replay's whole step was made from (`replay LOG --torch-trace
    /// TRACE`): checked against the replay file and the log (another run's is refused).
    /// With --to: the trace recorded with the log (its framework ops are projected too).
    #[arg(long, value_name = "TRACE")]
    torch_trace: Option<PathBuf>,
    /// Machine profile of the target, for problems without replay results (roofline).
    #[arg(long, value_name = "PROFILE.json")]
    machine: Option<PathBuf>,
    /// Print the projection as JSON (`profilednn.projection.v1`, see docs/project-json.md): as
    /// `--format json`.
    #[arg(long)]
    json: bool,
    /// Training iterations in the log, when not detected.
    #[arg(long, value_parser = crate::load::count)]
    iterations: Option<u64>,
    /// Project even when no problem of the log has a result in the replay (a replay of
    /// another log): the log's time is then carried over.
    #[arg(long)]
    allow_mismatch: bool,
    /// Project onto a machine not at hand: its profile (`profilednn peak -o FILE` there, or a
    /// spec sheet); repeat for several targets. See docs/machines.md.
    #[arg(long, value_name = "TARGET.json", conflicts_with_all = ["replay", "machine"])]
    to: Vec<PathBuf>,
    /// With --to: the profile of the machine the log ran on (default: the saved profile, when
    /// the log ran on this machine).
    #[arg(long, value_name = "SOURCE.json", requires = "to")]
    from: Option<PathBuf>,
    /// With --to: threads per rank on the target (default: the log's).
    #[arg(long, value_parser = crate::load::count_usize, requires = "to")]
    threads: Option<usize>,
    /// With --to: samples in one epoch, for the epoch's time on each target (needs --batch).
    #[arg(long, value_parser = crate::load::count, requires = "to")]
    samples_per_epoch: Option<u64>,
    /// With --to: samples one step of the log trains on (the global batch).
    #[arg(long, value_parser = crate::load::count, requires = "to")]
    batch: Option<u64>,
    /// With --to: the price per hour of each target, once per --to in the same order: the
    /// cost per epoch, cheapest target first (needs --samples-per-epoch and --batch).
    #[arg(long, value_name = "P", requires = "to")]
    price_per_hour: Vec<f64>,
    /// `table` (the terminal; also `terminal`), `json` (with --to:
    /// `profilednn.machine-projection.v1`, docs/machines.md) or, with --to, `html` (a
    /// self-contained page: the targets side by side with their bands).
    #[arg(long, default_value = "table", value_parser = Format::only(&[Format::Table, Format::Json, Format::Html]))]
    format: Format,
}

pub fn run(args: ProjectArgs) -> Result<ExitCode> {
    let json = args.format.or_json(args.json) == Format::Json;
    if args.format == Format::Html && args.to.is_empty() {
        bail!("--format html draws the projection onto other machines: give --to TARGET.json (for a what-if's page: `profilednn report LOG --replay R.json --format html`)");
    }
    if !args.to.is_empty() {
        return to(args, json);
    }
    if args.torch_trace.is_some() && args.replay.is_none() {
        bail!("--torch-trace goes with --replay RESULTS.json or --to TARGET.json");
    }
    if args.replay.is_none() && args.machine.is_none() {
        bail!("give the target: --to TARGET.json (a machine profile: the step there), --replay RESULTS.json (from `profilednn replay`) and/or --machine PROFILE.json");
    }
    let replay: Option<Replay> = match &args.replay {
        Some(p) => Some(profilednn_replay::file::load(p)?),
        None => None,
    };
    if let (Some(t), Some(r), Some(p)) = (&args.torch_trace, &replay, &args.replay) {
        profilednn_torchreplay::step::check_trace(t, &args.log, r, p)?;
    }
    let machine = match &args.machine {
        Some(p) => Some(profilednn_project::machine_file::read(p)?),
        None => None,
    };
    // A replay with the whole step (`framework`) projects a log without a oneDNN line too.
    let whole_step = replay.as_ref().is_some_and(|r| r.framework.is_some());
    let profile = crate::load::profile_with(&args.log, None, args.iterations, true, whole_step)?;
    let pr = crate::replay_file::projection(
        &args.log,
        &profile,
        replay.as_ref(),
        machine.as_ref(),
        if args.allow_mismatch {
            crate::replay_file::Mismatch::Allow
        } else {
            crate::replay_file::Mismatch::RefuseNone
        },
    )?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&pr)?);
        return Ok(ExitCode::SUCCESS);
    }
    let polluted = crate::polluted::of(&profile).map(|w| w.reason);
    crate::output::write(
        None,
        profilednn_report::projection::render_withheld(&pr, polluted.as_deref()),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `project --to`: the step on other machines (`project_to`), in JSON when `json` says so.
fn to(args: ProjectArgs, json: bool) -> Result<ExitCode> {
    crate::project_to::run(crate::project_to::ToArgs {
        log: &args.log,
        trace: args.torch_trace.as_deref(),
        to: &args.to,
        from: args.from.as_deref(),
        threads: args.threads,
        iterations: args.iterations,
        format: if json { Format::Json } else { args.format },
        epoch: profilednn_project::target::epoch::EpochRequest {
            samples_per_epoch: args.samples_per_epoch,
            batch: args.batch,
            prices_per_hour: args.price_per_hour,
        },
    })
}
