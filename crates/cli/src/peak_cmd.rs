//! `profilednn peak`: measure this machine's compute peaks and memory bandwidth.

use crate::ExitCode;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_machine::cpu;
use profilednn_machine::measure::{measure, Effort};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct PeakArgs {
    /// Write the machine profile here (default: the per-user profile that `report` picks up,
    /// ~/.config/profilednn/machine.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// A few seconds instead of about half a minute: fewer runs, smaller sweep.
    #[arg(long)]
    quick: bool,
    /// Threads for the all-core figures (default: all hardware threads).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// Print the profile as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(args: PeakArgs) -> Result<ExitCode> {
    let threads = args.threads.unwrap_or_else(cpu::threads).max(1);
    let effort = if args.quick {
        Effort::quick(threads)
    } else {
        Effort::standard(threads)
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(ProgressStyle::with_template("{spinner} measuring {msg} [{elapsed}]").unwrap());
        b.enable_steady_tick(Duration::from_millis(120));
        b
    });
    let profile = measure(effort, &mut |step| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let path = match args.output {
        Some(p) => p,
        None => crate::machine_file::default_path()
            .context("no HOME or XDG_CONFIG_HOME to save the profile in; pass -o FILE")?,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(&profile)? + "\n";
    crate::output::write_file(&path, &json)?;
    if args.json {
        crate::output::write(None, json)?;
    } else {
        crate::output::write(None, profilednn_report::machine::render(&profile))?;
    }
    eprintln!("machine profile written to {}", path.display());
    Ok(ExitCode::SUCCESS)
}
