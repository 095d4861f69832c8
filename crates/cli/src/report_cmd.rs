//! `profilednn report`.

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, summarize, GroupKey, Profile, ScanOptions, SummaryOptions};
use profilednn_report::terminal::TerminalOptions;
use profilednn_verbose::LogInput;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Verbose logs: plain text, gzip (.gz), or `-` for stdin. Several logs (one per rank, say)
    /// are shown side by side and merged.
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// Group by these keys instead of the standard breakdowns: any of engine, prim_kind, impl,
    /// prop_kind, mds, exts, aux, shapes (verbose_converter's names), dtype.
    #[arg(long, value_delimiter = ',', value_name = "KEY[,KEY…]")]
    by: Option<Vec<String>>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Rows of the top-primitives table (and of each terminal table).
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// Training iterations in the log, for per-iteration figures (otherwise detected from
    /// marker lines or the repeating call pattern, when possible).
    #[arg(long)]
    iterations: Option<u64>,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// Write the report to this file instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Machine profile for roofline efficiency (from `profilednn peak -o FILE`, or written by
    /// hand). Default: the profile `profilednn peak` saved for this machine, if any.
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// No efficiency section even when a machine profile exists.
    #[arg(long, conflicts_with = "machine")]
    no_roofline: bool,
}

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let by = match &args.by {
        Some(keys) => Some(
            keys.iter()
                .map(|k| GroupKey::parse(k.trim()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(anyhow::Error::msg)?,
        ),
        None if args.format == Format::Csv => Some(GroupKey::CONVERTER_DEFAULT.to_vec()),
        None => None,
    };
    if args.logs.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        bail!("stdin (-) can be given only once");
    }
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let mut profiles = Vec::new();
    for path in &args.logs {
        let input = LogInput::open(path).with_context(|| "cannot read the log".to_string())?;
        let progress = Arc::new(AtomicU64::new(0));
        let bar = progress_bar(&input, args.no_progress);
        let opts = ScanOptions {
            threads,
            progress: Some(progress.clone()),
            ..Default::default()
        };
        let out = std::thread::scope(|s| {
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let ticker = bar.clone().map(|b| {
                let (p, d) = (progress.clone(), done.clone());
                s.spawn(move || {
                    while !d.load(Ordering::Relaxed) {
                        b.set_position(p.load(Ordering::Relaxed));
                        std::thread::sleep(Duration::from_millis(100));
                    }
                })
            });
            let out = scan(input, &opts);
            done.store(true, Ordering::Relaxed);
            if let Some(t) = ticker {
                let _ = t.join();
            }
            out
        });
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let name = if path.as_os_str() == "-" {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        profiles.push(Profile::from_scan(
            name,
            out,
            &ProfileOptions {
                iterations: args.iterations,
            },
        ));
    }
    let machine = if args.no_roofline {
        None
    } else {
        crate::machine_file::load(args.machine.as_deref())?
    };
    let summary = summarize(
        &profiles,
        &SummaryOptions {
            by,
            top: args.top,
            machine,
        },
    );
    let text = match args.format {
        Format::Table => {
            let width = if std::io::stdout().is_terminal() && args.output.is_none() {
                None
            } else {
                Some(160)
            };
            profilednn_report::terminal::render(
                &summary,
                &TerminalOptions {
                    rows: args.top,
                    width,
                },
            )
        }
        Format::Json => profilednn_report::json::render(&summary),
        Format::Csv => profilednn_report::csv_out::render(&summary)?,
    };
    match &args.output {
        Some(p) => std::fs::write(p, text)
            .with_context(|| format!("{}: cannot write the report", p.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(e.into());
                }
            }
        }
    }
    // A log that could not be read to its end is a partial result: say so in the exit code.
    if !summary.read_errors.is_empty() {
        for e in &summary.read_errors {
            eprintln!("profilednn: error: {e} (the report covers the data before that point)");
        }
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(input: &LogInput, disabled: bool) -> Option<ProgressBar> {
    if disabled || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match input {
        LogInput::Mapped { map, .. } if map.len() > (32 << 20) => {
            let b = ProgressBar::new(map.len() as u64);
            b.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                )
                .expect("template")
                .progress_chars("=> "),
            );
            b
        }
        LogInput::Stream { .. } => {
            let b = ProgressBar::new_spinner();
            b.set_style(
                ProgressStyle::with_template("{spinner} {msg} {bytes} read, {bytes_per_sec}")
                    .expect("template"),
            );
            b
        }
        _ => return None,
    };
    bar.set_message(input.path().display().to_string());
    Some(bar)
}
