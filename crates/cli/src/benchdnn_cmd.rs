//! `profilednn benchdnn LOG -o DIR` and `profilednn benchdnn --ingest RESULTS`.

use crate::ExitCode;
use anyhow::{bail, Context, Result};
use clap::Args;
use profilednn_benchdnn::batch::{batch_file, batches};
use profilednn_benchdnn::ingest::{parse_perf, SCHEMA};
use std::path::PathBuf;

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
    if let Some(results) = &args.ingest {
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
        crate::output::write(args.output.as_deref(), text)?;
        return Ok(if errors.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        });
    }
    let log = args.log.expect("required");
    let dir = args.output.context("pass -o DIR for the batch files")?;
    let profile = crate::load::profile(&log, None, None, args.no_progress)?;
    let b = batches(&profile);
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let source = log.display().to_string();
    let mut run = String::from(
        "#!/bin/sh\n# Runs every batch file with benchdnn (BENCHDNN=path/to/benchdnn) and keeps the results.\nset -e\ncd \"$(dirname \"$0\")\"\nBENCHDNN=${BENCHDNN:-benchdnn}\nmkdir -p results\n",
    );
    for (driver, lines) in &b.drivers {
        let path = dir.join(format!("{driver}.batch"));
        crate::output::write_file(&path, batch_file(driver, &source, lines))?;
        run.push_str(&format!(
            "\"$BENCHDNN\" --mode=P --{driver} --batch={driver}.batch | tee results/{driver}.txt\n"
        ));
        eprintln!(
            "{:>12}  {:>4} problems  {:>8} calls  {:>10.1} ms",
            format!("{driver}.batch"),
            lines.len(),
            lines.iter().map(|l| l.calls).sum::<u64>(),
            lines.iter().map(|l| l.time_ms).sum::<f64>()
        );
    }
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
