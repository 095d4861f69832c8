//! `profilednn trace`: the log as a Chrome trace-event timeline (Perfetto, chrome://tracing).

use crate::ExitCode;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_analysis::events::{for_each_event, StreamStats};
use profilednn_report::trace::TraceWriter;
use profilednn_verbose::input::StreamError;
use profilednn_verbose::LogInput;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args)]
pub struct TraceArgs {
    /// The verbose log (plain, gzip, or `-` for stdin).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// The trace file (`-` for stdout). Open it in https://ui.perfetto.dev or chrome://tracing.
    #[arg(
        long,
        short = 'o',
        value_name = "TRACE.json",
        default_value = "trace.json"
    )]
    output: PathBuf,
    /// No progress bar on the terminal (it is shown only on a terminal, for long inputs).
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: TraceArgs) -> Result<ExitCode> {
    if let Some(e) = profilednn_analysis::ranks::logs::multi_rank_error(&args.log)? {
        return Err(e.into());
    }
    let input = LogInput::open(&args.log).context("cannot read the log")?;
    let sink = crate::output::create(&args.output).context("cannot create the trace")?;
    let mut w = TraceWriter::new(
        BufWriter::with_capacity(1 << 20, sink),
        &args.log.display().to_string(),
    )?;
    let (stats, read_error) = write_events(&mut w, input, args.no_progress)?;
    if stats.events == 0 && stats.malformed == 0 {
        drop(w);
        if args.output.as_os_str() != "-" {
            let _ = std::fs::remove_file(&args.output);
        }
        anyhow::bail!(crate::load::no_verbose_message(
            &args.log.display().to_string(),
            stats.lines,
            read_error.as_ref().map(|e| e.to_string()).as_deref(),
        ));
    }
    let timeline = w.timeline();
    let events = w.events;
    w.finish(serde_json::json!({
        "lines": stats.lines,
        "malformed_lines": stats.malformed,
        "distinct_primitives": stats.distinct_primitives,
        "read_error": read_error.as_ref().map(|e| e.to_string()),
    }))?;
    if args.output.as_os_str() != "-" {
        eprintln!(
            "profilednn: {events} events written to {} (timeline {}); open it in https://ui.perfetto.dev",
            args.output.display(),
            timeline.map_or("empty", |t| t.describe())
        );
    }
    if stats.malformed > 0 {
        eprintln!(
            "profilednn: {} malformed verbose lines left out (`profilednn report` lists them)",
            stats.malformed
        );
    }
    Ok(crate::output::read_errors_status(read_error, "the trace"))
}

/// Every event of `input` into `w`, with a spinner on terminals. The log is read to its end
/// even after a write error, which is returned then: the read's own error is the caller's.
fn write_events<W: Write>(
    w: &mut TraceWriter<W>,
    input: LogInput,
    no_progress: bool,
) -> Result<(StreamStats, Option<StreamError>)> {
    let bar = (!no_progress && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("template"));
        b
    });
    let mut io_error = None;
    let read = for_each_event(input, |e| {
        if io_error.is_none() {
            if let Err(err) = w.event(&e) {
                io_error = Some(err);
            }
            if let Some(b) = &bar {
                if w.events.is_multiple_of(100_000) {
                    b.set_message(format!("{} events written", w.events));
                }
            }
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match io_error {
        Some(e) => Err(e).context("cannot write the trace"),
        None => Ok(read),
    }
}
