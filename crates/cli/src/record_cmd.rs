//! `profilednn record -- COMMAND`: run a training command with oneDNN verbose mode on, keep the
//! program's own output on the terminal, and write only the verbose lines to the log.

pub use crate::record_args::RecordArgs;
use crate::record_child::{child_ended, exit_code, forward_signals, pass_through, Log};
use crate::ExitCode;
use anyhow::{Context, Result};
use profilednn_analysis::ranks::launcher;
use profilednn_torchtrace::recording;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let path = args.output.clone().unwrap_or_else(default_log_path);
    let mut log = Log::create(&path)?;
    let env = |k: &str| std::env::var(k).ok();
    // Run as one rank by the launcher, `record` labels nothing: its log is that rank's.
    let command = if args.ranks && !launcher::inside_a_rank(&args.command, env) {
        launcher::with_rank_labels(&args.command)?
    } else {
        args.command.clone()
    };
    write_header(&mut log, &args, &command)?;
    let launch = args
        .ranks
        .then(|| crate::record_launch::launching(&command, env));
    let program = &command[0];
    let mut child = match child_command(&args, &command, &path).spawn() {
        Ok(c) => c,
        Err(e) => return Err(nothing_ran(log, &path, program, e)),
    };
    forward_signals(child.id());
    let sampler = launch
        .is_some()
        .then(|| crate::record_launch::Sampler::start(child.id()));
    let passed = pass_through(child.stdout.take().expect("piped"), &mut log)?;
    let status = child.wait()?;
    child_ended();
    if let (Some(l), Some(s)) = (launch, sampler) {
        crate::record_launch::write(&path, l, s)?;
    }
    log.finish()
        .with_context(|| format!("{}: cannot write the log", path.display()))?;
    eprintln!(
        "profilednn: {} verbose lines written to {} ({} lines of program output passed through); {}",
        passed.verbose_lines,
        path.display(),
        passed.app_lines,
        status
    );
    if let Some(note) = passed.ranks.note(program) {
        eprintln!("{note}");
    }
    end_of_run(&path, args.torch, args.no_report, passed.verbose_lines);
    Ok(exit_code(status))
}

/// `profilednn-SECONDS.log`: each run without `-o` gets a log of its own.
fn default_log_path() -> PathBuf {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("profilednn-{secs}.log"))
}

/// The log's first lines: the node's (`--ranks`: the logs of several nodes are read together
/// by it), then the interpreter of a PyTorch run (`--torch`: kept for the whole-step replay,
/// which runs PyTorch through it when the venv is not on the PATH).
fn write_header(log: &mut Log, args: &RecordArgs, command: &[OsString]) -> Result<()> {
    let env = |k: &str| std::env::var(k).ok();
    let node = args
        .ranks
        .then(|| launcher::node_line(command, env, &launcher::host_name()))
        .flatten();
    let python = args
        .torch
        .then(|| profilednn_torchreplay::recorded(Path::new(&command[0])))
        .flatten()
        .map(|py| profilednn_torchtrace::recorded_python::line(&py));
    for line in node.into_iter().chain(python) {
        log.write_all(line.as_bytes())?;
        log.write_all(b"\n")?;
    }
    Ok(())
}

/// The program as `record` runs it: oneDNN's verbose mode on, its output piped through us, and
/// with `--torch` the trace asked for. The child gets its own process group so that a Ctrl-C
/// reaches it exactly once: through us (`forward_signals`), after which we still finish the log
/// and the report.
fn child_command(args: &RecordArgs, command: &[OsString], path: &Path) -> Command {
    let (program, rest) = command.split_first().expect("required");
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .envs(profilednn_verbose::env::of_recording(
            args.level,
            !args.no_timestamps,
        ))
        .stdout(Stdio::piped());
    if args.torch {
        cmd.envs(recording::env(path, |k| std::env::var_os(k)));
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd
}

/// `program` could not be started. Nothing ran, so no log: an empty file left behind would read
/// as a run without a verbose line.
fn nothing_ran(log: Log, path: &Path, program: &OsStr, e: std::io::Error) -> anyhow::Error {
    drop(log);
    let _ = std::fs::remove_file(path);
    anyhow::anyhow!(
        "cannot run {}: {e} (no log written to {})",
        program.to_string_lossy(),
        path.display()
    )
}

/// What `record` says once the program ended: a missing PyTorch trace (with the lines to add),
/// a run without oneDNN lines (and where its step is), else `report LOG`'s sections (roofline
/// and advice included) unless `--no-report`. The log is written whatever the report says: a
/// report that fails (an unreadable machine profile, say) is told, and the program's exit
/// status stays the command's.
fn end_of_run(path: &std::path::Path, torch: bool, no_report: bool, verbose_lines: u64) {
    let trace = torch.then(|| recording::trace_path(path));
    if let Some(t) = trace.as_ref().filter(|t| !t.exists()) {
        eprintln!(
            "profilednn: no PyTorch trace was written ({}): the script never entered \
             profilednn.profile(). Around its training loop:\n    with profilednn.profile() as prof:\n        \
             for batch in loader: train_step(batch); prof.step()",
            t.display()
        );
    }
    if verbose_lines == 0 {
        eprintln!("profilednn: the program printed no oneDNN verbose lines: does it use oneDNN (PyTorch on CPU: convolutions and bf16 matmuls; f32 Linear runs in BLAS and attention in ATen, which oneDNN never logs)?");
        if let Some(t) = trace.as_ref().filter(|t| t.exists()) {
            eprintln!(
                "profilednn: the step is in the PyTorch trace: profilednn report {} --torch-trace {}",
                path.display(),
                t.display()
            );
        }
    } else if !no_report {
        let trace = trace.filter(|t| t.exists());
        let args = crate::report_cmd::ReportArgs::end_of_record(path.to_path_buf(), trace);
        if let Err(e) = crate::report_cmd::run(args) {
            eprintln!(
                "profilednn: the log is written, but its report failed: {e:#}; run `profilednn report {}`",
                path.display()
            );
        }
    }
}
