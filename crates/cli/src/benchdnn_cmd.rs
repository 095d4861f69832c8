//! `profilednn benchdnn LOG -o DIR` and `profilednn benchdnn --ingest RESULTS`.

use crate::ExitCode;
use anyhow::{bail, Context, Result};
use clap::Args;
use profilednn_benchdnn::batch::{batch_file, batches, run_script};
use profilednn_benchdnn::ingest::{parse_perf, SCHEMA};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct BenchdnnArgs {
    /// The verbose log to export.
    #[arg(value_name = "LOG", required_unless_present = "ingest")]
    log: Option<PathBuf>,
    /// Directory for the batch files (one per driver, plus run.sh).
    #[arg(long, short = 'o', value_name = "DIR")]
    output: Option<PathBuf>,
    /// Read benchdnn's performance output (default or --perf-template=csv) and print it as JSON.
    #[arg(long, value_name = "RESULTS", conflicts_with = "log")]
    ingest: Option<PathBuf>,
    /// No progress bar on the terminal (it is shown only on a terminal, for long inputs).
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: BenchdnnArgs) -> Result<ExitCode> {
    match (&args.ingest, args.log) {
        (Some(results), _) => ingest(results, args.output.as_deref()),
        (None, log) => {
            let log = log.expect("required");
            let dir = args.output.context("pass -o DIR for the batch files")?;
            export(&log, &dir, args.no_progress)
        }
    }
}

/// benchdnn's results file as JSON, to `output` or stdout; exit code 2 when lines were skipped.
fn ingest(results: &Path, output: Option<&Path>) -> Result<ExitCode> {
    let text = std::fs::read_to_string(results)
        .with_context(|| format!("{}: cannot read", results.display()))?;
    let (records, errors) = parse_perf(&text);
    for e in &errors {
        eprintln!("profilednn: {}: {e} (line skipped)", results.display());
    }
    if records.is_empty() {
        bail!(
            "{}: no `perf,` lines found: run benchdnn with --mode=P (performance mode)",
            results.display()
        );
    }
    let json = serde_json::json!({
        "schema": SCHEMA,
        "source": results.display().to_string(),
        "results": records,
    });
    let text = serde_json::to_string_pretty(&json)? + "\n";
    crate::output::write(output, text)?;
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

/// The log's batch files and their `run.sh` in `dir`, each driver's weight said on stderr.
fn export(log: &Path, dir: &Path, no_progress: bool) -> Result<ExitCode> {
    let profile = crate::load::profile(log, None, None, no_progress)?;
    let b = batches(&profile);
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let source = log.display().to_string();
    for (driver, lines) in &b.drivers {
        let path = dir.join(format!("{driver}.batch"));
        crate::output::write_file(&path, batch_file(driver, &source, lines))?;
        eprintln!(
            "{:>12}  {:>4} problems  {:>8} calls  {:>10.1} ms",
            format!("{driver}.batch"),
            lines.len(),
            lines.iter().map(|l| l.calls).sum::<u64>(),
            lines.iter().map(|l| l.time_ms).sum::<f64>()
        );
    }
    let run = run_script(b.drivers.keys().map(String::as_str));
    crate::output::write_file(&dir.join("run.sh"), run)?;
    for (kind, calls) in &b.skipped {
        eprintln!("  skipped {calls} executions of {kind}: benchdnn has no driver for it");
    }
    eprintln!(
        "profilednn: batch files in {}; run them with `sh {}/run.sh`, then `profilednn benchdnn --ingest {}/results/conv.txt`",
        dir.display(),
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
