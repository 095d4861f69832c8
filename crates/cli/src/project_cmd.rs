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
    let unit = if pr.scale == "per_iteration" {
        "ms per iteration"
    } else {
        "ms in all"
    };
    outln!("Projection of {} onto {}", pr.source, pr.target);
    if let Some(v) = &pr.replay_onednn {
        let log = if pr.log_onednn.is_empty() {
            "an unknown oneDNN (no version line in the log)".to_string()
        } else {
            pr.log_onednn.join(", ")
        };
        let changed: usize = pr.groups.iter().map(|g| g.implementation_changed).sum();
        outln!(
            "  log recorded with {log}; replayed with oneDNN {v} ({} replay); {changed} problem(s) ran another implementation here{}",
            pr.replay_mode.as_deref().unwrap_or("isolated"),
            if changed > 0 { " (per group below)" } else { "" }
        );
    }
    if let Some(w) = &pr.what_if {
        outln!("  what-if: {}", w.transform);
        for a in &w.assumptions {
            outln!("    assumed: {a}");
        }
        outln!(
            "    calls per iteration: {} logged → {} ({} removed, {} added); autocast casts {:.3} {unit} (outside oneDNN in PyTorch)",
            w.logged_calls_per_iteration,
            w.projected_calls_per_iteration,
            w.removed_calls,
            w.added_calls,
            w.autocast_casts_ms
        );
        for n in &w.not_replayed {
            outln!("    not replayed (logged time of the same problem, else 0): {n}");
        }
    }
    outln!(
        "  oneDNN: {:.3} → {:.3} {unit} ({:+.1}%{})",
        pr.logged_onednn_ms,
        pr.projected_onednn_ms,
        (pr.projected_onednn_ms / pr.logged_onednn_ms.max(1e-12) - 1.0) * 100.0,
        pr.replay_dispersion
            .map(|d| format!("; replay ±{:.1}%", d * 100.0))
            .unwrap_or_default()
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
        "\n{:<24} {:<18} {:>12} {:>12} {:>8} {:>13}",
        "kind",
        "prop",
        "logged",
        "projected",
        "change",
        "impl changed"
    );
    for g in &pr.groups {
        // A group only the what-if has (autocast's casts, removed reorders) has no ratio.
        let change = if g.logged_ms > 0.0 && g.projected_ms > 0.0 {
            format!("{:>+7.1}%", (g.projected_ms / g.logged_ms - 1.0) * 100.0)
        } else if g.logged_ms > 0.0 {
            "removed".into()
        } else {
            "added".into()
        };
        outln!(
            "{:<24} {:<18} {:>12.3} {:>12.3} {:>8} {:>13}",
            g.prim_kind,
            g.prop_kind,
            g.logged_ms,
            g.projected_ms,
            change,
            g.implementation_changed
        );
    }
    outln!("\nMethod: {}", pr.method);
    Ok(ExitCode::SUCCESS)
}
