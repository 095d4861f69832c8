//! `profilednn`: the command-line shell over the ProfileDNN libraries.
//!
//! A library so that one function, [`run`], is the whole command: the binary (`src/main.rs`)
//! calls it with the process arguments, and the Python package calls it from its
//! `profilednn` console script (`pip install ./python` installs kernels and command at once).

mod advice_projections;
mod advise_args;
mod advise_cmd;
mod advised;
mod benchdnn_cmd;
mod diff_cmd;
mod format;
mod load;
mod output;
mod peak_cmd;
mod plan_args;
mod plan_cmd;
mod plan_replay;
mod polluted;
mod progress;
mod project_cmd;
mod project_to;
mod record_args;
mod record_child;
mod record_cmd;
mod record_launch;
mod replay_args;
mod replay_cmd;
mod replay_file;
mod replay_output;
mod replay_torch;
mod report_args;
mod report_cmd;
mod trace_cmd;
mod whatif_run;

use clap::{Parser, Subcommand};
/// A command's exit status. `std::process::ExitCode` hides its number, which the Python console
/// script needs to exit with (`ExitCode::exit_process` is unstable); this one keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitCode(pub u8);

impl ExitCode {
    pub const SUCCESS: ExitCode = ExitCode(0);
    pub const FAILURE: ExitCode = ExitCode(1);
}

impl From<u8> for ExitCode {
    fn from(code: u8) -> ExitCode {
        ExitCode(code)
    }
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(code: ExitCode) -> std::process::ExitCode {
        std::process::ExitCode::from(code.0)
    }
}

const ABOUT: &str = "Where does CPU training time go? ProfileDNN reads oneDNN verbose logs \
(ONEDNN_VERBOSE / DNNL_VERBOSE / MKLDNN_VERBOSE, every format generation) and breaks the time down.";

const AFTER_HELP: &str = "\
The method: profile -> project -> optimize (try each step on the bundled real log).
  1. Profile:  record a training run with verbose mode on, then break the time down:
                 profilednn record -o train.log -- python train.py
                 profilednn report examples/retinanet_rnx50_fp32.log.gz
               Time by primitive kind, direction, implementation, data type; heaviest primitives.
  2. Project:  how far is each primitive from what the machine can do?
                 profilednn peak              (measures this machine, saved for `report`)
                 profilednn report examples/retinanet_rnx50_fp32.log.gz \\
                     --machine fixtures/machine/xeon-8480-spec.json
               Roofline per primitive and per group; time lost against it, largest first.
                 profilednn replay train.log -o replay.json   (needs pip onednn-cpu-gomp)
                 profilednn project train.log --replay replay.json
               The same primitives re-run here through oneDNN; training time projected.
                 profilednn plan train.log --cores 2     (ranks × threads at the same batch)
  3. Optimize: rules that turn the evidence into actions, each with its estimated gain:
                 profilednn advise examples/retinanet_rnx50_fp32.log.gz
               (reorder churn -> channels-last, f32 on bf16 hardware -> autocast, …)

Iterations: print `profilednn,iteration,N` (flush) at the start of each training step for
per-iteration figures; otherwise they are detected from the repeating call pattern.";

#[derive(Parser)]
#[command(name = "profilednn", version, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Break oneDNN time down by kind, direction, implementation, data type and primitive.
    Report(report_cmd::ReportArgs),
    /// Export the log's primitives as benchdnn batch files (or read benchdnn's results back).
    Benchdnn(benchdnn_cmd::BenchdnnArgs),
    /// Re-create and time every unique primitive of a log through oneDNN on this machine.
    Replay(replay_args::ReplayArgs),
    /// Project the log's training time onto another machine (replay results or a machine profile).
    Project(project_cmd::ProjectArgs),
    /// Compare two runs: per group and per primitive, appeared/disappeared, implementation changes.
    Diff(diff_cmd::DiffArgs),
    /// Write the log as a Chrome trace-event timeline (Perfetto, chrome://tracing).
    Trace(trace_cmd::TraceArgs),
    /// Run a training command with oneDNN verbose mode on; write the verbose lines to a log.
    Record(record_cmd::RecordArgs),
    /// Turn a profile into actions: rules with evidence, estimated gain and what to try.
    Advise(advise_cmd::AdviseArgs),
    /// Measure this machine's compute peaks and memory bandwidth (the roofline's ceilings).
    Peak(peak_cmd::PeakArgs),
    /// Split the cores into ranks × threads: each split's iteration projected at the same global batch.
    Plan(plan_cmd::PlanArgs),
}

/// Runs the command line `args` (the program name first) and returns its exit status.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    // Like other Unix tools, end quietly when the reader of stdout goes away (`| head`): every
    // command writes through `output`, which exits with status 0 on a broken pipe (SIGPIPE is
    // left ignored, as Rust and Python set it, so that the write reports it).
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Report(args) => report_cmd::run(args),
        Command::Peak(args) => peak_cmd::run(args),
        Command::Advise(args) => advise_cmd::run(args),
        Command::Record(args) => record_cmd::run(args),
        Command::Trace(args) => trace_cmd::run(args),
        Command::Diff(args) => diff_cmd::run(args),
        Command::Benchdnn(args) => benchdnn_cmd::run(args),
        Command::Replay(args) => replay_cmd::run(args),
        Command::Project(args) => project_cmd::run(args),
        Command::Plan(args) => plan_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("profilednn: error: {}", load::error_text(&e));
            ExitCode::from(1)
        }
    }
}
