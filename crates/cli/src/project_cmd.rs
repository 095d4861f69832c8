//! `profilednn project LOG --replay RESULTS.json | --machine PROFILE.json`.

use crate::output::outln;
use anyhow::{bail, Context, Result};
use clap::Args;
use profilednn_machine::MachineProfile;
use profilednn_replay::native::Replay;
use profilednn_replay::project::project;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args)]
pub struct ProjectArgs {
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Replay results of the target machine (`profilednn replay … -o RESULTS.json`).
    #[arg(long, value_name = "RESULTS.json")]
    replay: Option<PathBuf>,
    /// Machine profile of the target, for problems without replay results (roofline).
    #[arg(long, value_name = "PROFILE.json")]
    machine: Option<PathBuf>,
    #[arg(long)]
    json: bool,
    /// Training iterations in the log, when not detected.
    #[arg(long)]
    iterations: Option<u64>,
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
    let profile =
        crate::load::profiles(std::slice::from_ref(&args.log), None, args.iterations, true)?
            .remove(0);
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
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&pr)?);
        return Ok(ExitCode::SUCCESS);
    }
    let unit = if pr.scale == "per_iteration" {
        "ms per iteration"
    } else {
        "ms in all"
    };
    outln!("Projection of {} onto {}", pr.source, pr.target);
    outln!(
        "  oneDNN: {:.3} → {:.3} {unit} ({:+.1}%)",
        pr.logged_onednn_ms,
        pr.projected_onednn_ms,
        (pr.projected_onednn_ms / pr.logged_onednn_ms.max(1e-12) - 1.0) * 100.0
    );
    outln!(
        "  (logged oneDNN time with cold starts: {:.3} {unit})",
        pr.logged_onednn_raw_ms
    );
    if let (Some(r), Some(l), Some(p)) = (pr.residual_ms, pr.logged_total_ms, pr.projected_total_ms)
    {
        outln!("  outside oneDNN (carried over): {r:.3} {unit}");
        outln!("  training step: {l:.3} → {p:.3} {unit}");
    }
    let cov: Vec<String> = pr
        .coverage
        .iter()
        .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
        .collect();
    outln!("  logged oneDNN time by method: {}", cov.join(", "));
    outln!(
        "\n{:<24} {:<18} {:>12} {:>12}",
        "kind",
        "prop",
        "logged",
        "projected"
    );
    for g in &pr.groups {
        outln!(
            "{:<24} {:<18} {:>12.3} {:>12.3}",
            g.prim_kind,
            g.prop_kind,
            g.logged_ms,
            g.projected_ms
        );
    }
    outln!("\nMethod: {}", pr.method);
    Ok(ExitCode::SUCCESS)
}
