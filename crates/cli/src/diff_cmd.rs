//! `profilednn diff BEFORE AFTER`.

use crate::format::Format;
use crate::ExitCode;
use anyhow::Result;
use clap::Args;
use profilednn_analysis::diff::{diff, DiffOptions};
use profilednn_analysis::Profile;
use profilednn_report::diff_doc::DiffDoc;
use profilednn_report::terminal::TerminalOptions;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct DiffArgs {
    /// The reference run (or "before").
    #[arg(value_name = "BEFORE")]
    before: PathBuf,
    /// Your run (or "after").
    #[arg(value_name = "AFTER")]
    after: PathBuf,
    /// Output format: `table` (terminal), `json`, or `html` (one self-contained page).
    #[arg(long, default_value = "table", value_parser = Format::only(&[Format::Table, Format::Json, Format::Html]))]
    format: Format,
    /// Match primitives across different minibatch sizes.
    #[arg(long)]
    ignore_batch: bool,
    /// Match primitives across data types (an f32 run against its bf16 version).
    #[arg(long)]
    ignore_dtype: bool,
    /// Rows per table.
    #[arg(long, default_value_t = 15, value_parser = crate::load::count_usize)]
    top: usize,
    /// Iterations of BEFORE and AFTER, when not detected (`--iterations 3,5`).
    #[arg(long, value_name = "B,A", value_parser = crate::load::count_pair)]
    iterations: Option<(u64, u64)>,
    /// PyTorch profiler traces of the two runs (`record --torch`): adds the phases and
    /// framework ops of both, in and outside oneDNN.
    #[arg(long, num_args = 2, value_names = ["BEFORE_TRACE", "AFTER_TRACE"])]
    torch_trace: Option<Vec<PathBuf>>,
    /// Write the output to this file instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Threads for reading the log(s) (default: every core).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// No progress bar on the terminal (it is shown only on a terminal, for long inputs).
    #[arg(long)]
    no_progress: bool,
}

pub fn run(args: DiffArgs) -> Result<ExitCode> {
    let (before, after) = load(&args)?;
    let d = diff(
        &before,
        &after,
        &DiffOptions {
            ignore_batch: args.ignore_batch,
            ignore_dtype: args.ignore_dtype,
            top: args.top,
        },
    )
    .with_steps(
        profilednn_analysis::ranks::logs::steady_step(&args.before),
        profilednn_analysis::ranks::logs::steady_step(&args.after),
    );
    let torch = match &args.torch_trace {
        Some(t) => Some((
            crate::load::torch_join(&t[0], &args.before)?,
            crate::load::torch_join(&t[1], &args.after)?,
        )),
        None => None,
    };
    // A log without a timestamped oneDNN line gives no step: the traces' iteration ranges do.
    let d = match &torch {
        Some((b, a)) => d.with_trace_steps(b, a),
        None => d,
    };
    let doc = DiffDoc {
        diff: &d,
        torch: torch.as_ref().map(|(b, a)| (b, a)),
    };
    let text = match args.format {
        Format::Table | Format::Csv => doc.text(&TerminalOptions {
            rows: args.top,
            width: (!std::io::stdout().is_terminal() || args.output.is_some()).then_some(160),
            columns: Default::default(),
        }),
        Format::Json => serde_json::to_string_pretty(&doc.json()?)? + "\n",
        Format::Html => doc.html(),
    };
    crate::output::write(args.output.as_deref(), text)?;
    Ok(crate::output::read_errors_status(
        before.read_error.iter().chain(after.read_error.iter()),
        "the diff",
    ))
}

/// The profiles of BEFORE and AFTER. With traces, a log without a oneDNN line still has a step
/// (an f32 transformer, a compiled model: eager against compiled is what `--torch-trace` shows).
fn load(args: &DiffArgs) -> Result<(Profile, Profile)> {
    let empty_ok = args.torch_trace.is_some();
    let read = |log: &PathBuf, iterations: Option<u64>| {
        crate::load::profile_with(log, args.threads, iterations, args.no_progress, empty_ok)
    };
    let it = args.iterations;
    Ok((
        read(&args.before, it.map(|(b, _)| b))?,
        read(&args.after, it.map(|(_, a)| a))?,
    ))
}
