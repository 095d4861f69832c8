//! `profilednn project LOG --replay RESULTS.json | --machine PROFILE.json`.

use crate::output::outln;
use crate::ExitCode;
use anyhow::{bail, Context, Result};
use clap::Args;
use profilednn_machine::MachineProfile;
use profilednn_replay::native::Replay;
use profilednn_replay::project::{project, ReplayMatch};
use std::path::PathBuf;

#[derive(Args)]
pub struct ProjectArgs {
    /// The oneDNN verbose log to project (plain or gzip; `-` reads stdin, without per-call medians).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Replay results of the target machine (`profilednn replay … -o RESULTS.json`).
    #[arg(long, value_name = "RESULTS.json")]
    replay: Option<PathBuf>,
    /// Machine profile of the target, for problems without replay results (roofline).
    #[arg(long, value_name = "PROFILE.json")]
    machine: Option<PathBuf>,
    /// Print the projection as JSON (`profilednn.projection.v1`, see docs/projection.md).
    #[arg(long)]
    json: bool,
    /// Training iterations in the log, when not detected.
    #[arg(long, value_parser = crate::load::count)]
    iterations: Option<u64>,
    /// Project even when no problem of the log has a result in the replay (a replay of
    /// another log): the log's time is then carried over.
    #[arg(long)]
    allow_mismatch: bool,
}

pub fn run(args: ProjectArgs) -> Result<ExitCode> {
    if args.replay.is_none() && args.machine.is_none() {
        bail!("give the target: --replay RESULTS.json (from `profilednn replay`) and/or --machine PROFILE.json");
    }
    let replay: Option<Replay> = match &args.replay {
        Some(p) => Some(
            serde_json::from_str(
                &std::fs::read_to_string(p)
                    .with_context(|| format!("{}: cannot read", p.display()))?,
            )
            .with_context(|| {
                format!(
                    "{}: not a `profilednn replay` result (profilednn.replay.v1)",
                    p.display()
                )
            })?,
        ),
        None => None,
    };
    let machine = match &args.machine {
        Some(p) => Some(MachineProfile::load(p)?),
        None => None,
    };
    let profile = crate::load::profile(&args.log, None, args.iterations, true)?;
    // Steady-state logged times: per-problem medians from a second pass (not for stdin).
    let medians = if args.log.as_os_str() == "-" {
        None
    } else {
        profilednn_verbose::LogInput::open(&args.log)
            .ok()
            .map(profilednn_replay::project::logged_medians)
    };
    let pr = project(
        &profile,
        replay.as_ref(),
        machine.as_ref(),
        medians.as_ref(),
    );
    if let Some(m) = &pr.replay_match {
        let what = format!(
            "{} of the log's {} problems ({:.1}% of its oneDNN time) have a result in the replay \
             ({} problems); log: {}; replay made from: {}",
            m.matched_problems,
            m.log_problems,
            m.matched_time_share * 100.0,
            m.replay_problems,
            pr.source,
            m.replay_source
        );
        if m.matched_problems == 0 && !args.allow_mismatch {
            bail!(
                "the replay results are not of this log: {what}. Replay this log \
                 (`profilednn replay LOG`), or pass --allow-mismatch to project anyway"
            );
        }
        if m.matched_time_share < ReplayMatch::FEW {
            eprintln!(
                "profilednn: WARNING: the replay results may be of another log: {what}; \
                 the rest is {}",
                if args.machine.is_some() {
                    "projected with the machine profile's roofline"
                } else {
                    "carried over unchanged"
                }
            );
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&pr)?);
        return Ok(ExitCode::SUCCESS);
    }
    crate::output::write(None, profilednn_report::projection::render(&pr))?;
    Ok(ExitCode::SUCCESS)
}
