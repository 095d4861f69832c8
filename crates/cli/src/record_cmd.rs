//! `profilednn record -- COMMAND`: run a training command with oneDNN verbose mode on, keep the
//! program's own output on the terminal, and write only the verbose lines to the log.

use crate::ExitCode;
use anyhow::{bail, Context, Result};
use clap::Args;
use flate2::write::GzEncoder;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};

#[derive(Args)]
pub struct RecordArgs {
    /// The log to write (`.gz` compresses). Default: `profilednn-<unix time>.log`.
    #[arg(long, short = 'o', value_name = "LOG")]
    output: Option<PathBuf>,
    /// Verbose level: 1 = executions, 2 = also primitive creations (cache hits and misses).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    level: u8,
    /// Do not ask oneDNN for timestamps.
    #[arg(long)]
    no_timestamps: bool,
    /// Do not print the summary report when the command ends.
    #[arg(long)]
    no_report: bool,
    /// Also capture PyTorch's profiler trace: `profilednn.profile()` in the script writes it
    /// next to the log (LOG stem + `.trace.json.gz`); then `report LOG --torch-trace TRACE`.
    #[arg(long)]
    torch: bool,
    /// Multi-process runs: add the launcher's own flag that labels each line with its rank
    /// (`torchrun --tee 3`, Open MPI `mpirun --tag-output`, MPICH `-prepend-rank`, `srun
    /// --label`), so that `report` profiles each rank. On one node of several (torchrun
    /// `--node-rank`), or run as one rank by srun/mpirun/torchrun `--no-python`, the log starts
    /// with the node's line (`profilednn,node,NAME,rank,R,host,HOST`), by which `report` reads
    /// the nodes' logs together.
    #[arg(long)]
    ranks: bool,
    /// The training command and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Environment that turns verbose mode on for every generation of the library.
pub fn verbose_env(level: u8, timestamps: bool) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("ONEDNN_VERBOSE", level.to_string()),
        ("DNNL_VERBOSE", level.to_string()),
        ("MKLDNN_VERBOSE", level.to_string()),
    ];
    if timestamps {
        v.push(("ONEDNN_VERBOSE_TIMESTAMP", "1".into()));
        v.push(("DNNL_VERBOSE_TIMESTAMP", "1".into()));
    }
    v
}

static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

enum Log {
    Plain(BufWriter<std::fs::File>),
    Gz(Box<GzEncoder<BufWriter<std::fs::File>>>),
}

impl Log {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Log::Plain(w) => w.write_all(b),
            Log::Gz(w) => w.write_all(b),
        }
    }
    fn finish(self) -> std::io::Result<()> {
        match self {
            Log::Plain(mut w) => w.flush(),
            Log::Gz(w) => (*w).finish()?.flush(),
        }
    }
}

/// This machine's name (`uname -n`): the node, when the launcher gives no number for it.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(','))
        .unwrap_or_else(|| "unknown-host".into())
}

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let path = args.output.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("profilednn-{secs}.log"))
    });
    let file = std::fs::File::create(&path)
        .with_context(|| format!("{}: cannot create the log", path.display()))?;
    let mut log = if path.extension().is_some_and(|e| e == "gz") {
        Log::Gz(Box::new(GzEncoder::new(
            BufWriter::new(file),
            flate2::Compression::fast(),
        )))
    } else {
        Log::Plain(BufWriter::with_capacity(1 << 20, file))
    };
    let env = |k: &str| std::env::var(k).ok();
    // Run as one rank by the launcher, `record` labels nothing: its log is that rank's.
    let command = if args.ranks && !crate::record_ranks::inside_a_rank(&args.command, env) {
        crate::record_ranks::with_rank_labels(&args.command)?
    } else {
        args.command.clone()
    };
    // The node's line first: the logs of several nodes are read together by it.
    if let Some(l) = args
        .ranks
        .then(|| crate::record_ranks::node_line(&command, env, &host_name()))
        .flatten()
    {
        log.write_all(l.as_bytes())?;
        log.write_all(b"\n")?;
    }
    let (program, rest) = command.split_first().expect("required");
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .envs(verbose_env(args.level, !args.no_timestamps))
        .stdout(Stdio::piped());
    if args.torch {
        cmd.env("PROFILEDNN_TORCH_TRACE", trace_path(&path));
        // torch.compile's generated kernels appear in the trace by name (each call wrapped in
        // a record function) only with this set when Inductor generates them; unless the user
        // chose otherwise.
        const KERNELS: &str = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE";
        if std::env::var_os(KERNELS).is_none() {
            cmd.env(KERNELS, "1");
        }
    }
    // The child gets its own process group so that a Ctrl-C reaches it exactly once: through
    // us, after which we still finish the log and the report.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            // Nothing ran, so no log: an empty file left behind would read as a run without a
            // verbose line.
            drop(log);
            let _ = std::fs::remove_file(&path);
            bail!(
                "cannot run {}: {e} (no log written to {})",
                program.to_string_lossy(),
                path.display()
            )
        }
    };
    CHILD.store(child.id() as i32, Ordering::Relaxed);
    // SAFETY: installing a handler that only calls kill(2), or putting back SIG_IGN.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let before = libc::signal(sig, forward as *const () as libc::sighandler_t);
            // A signal ignored when we started (`nohup`, a job a non-interactive shell put in
            // the background) stays ignored, as a shell's `trap` leaves it: the program
            // inherited the same disposition and would ignore it anyway.
            if before == libc::SIG_IGN {
                libc::signal(sig, libc::SIG_IGN);
            }
        }
    }
    let mut reader = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped"));
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut line = Vec::with_capacity(4096);
    let (mut verbose_lines, mut app_lines) = (0u64, 0u64);
    let mut stdout_open = true;
    let mut ranks = crate::record_ranks::RankWatch::default();
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        match crate::record_ranks::route(&line) {
            Some(r) => {
                if !r.terminal.is_empty() && stdout_open {
                    stdout_open = out.write_all(r.terminal).and_then(|_| out.flush()).is_ok();
                }
                log.write_all(r.label)?;
                log.write_all(r.verbose)?;
                if !line.ends_with(b"\n") {
                    log.write_all(b"\n")?;
                }
                ranks.see(&r);
                verbose_lines += 1;
            }
            None => {
                app_lines += 1;
                // Untouched, and right away: the program's output stays interactive. A closed
                // stdout (`| head`) must not stop the recording.
                if stdout_open {
                    stdout_open = out.write_all(&line).and_then(|_| out.flush()).is_ok();
                }
            }
        }
    }
    let status = child.wait()?;
    CHILD.store(0, Ordering::Relaxed);
    log.finish()
        .with_context(|| format!("{}: cannot write the log", path.display()))?;
    eprintln!(
        "profilednn: {} verbose lines written to {} ({} lines of program output passed through); {}",
        verbose_lines,
        path.display(),
        app_lines,
        status
    );
    if let Some(note) = ranks.note(program) {
        eprintln!("{note}");
    }
    end_of_run(&path, args.torch, args.no_report, verbose_lines);
    Ok(exit_code(status))
}

/// What `record` says once the program ended: a missing PyTorch trace (with the lines to add),
/// a run without oneDNN lines (and where its step is), else `report LOG`'s sections (roofline
/// and advice included) unless `--no-report`. The log is written whatever the report says: a
/// report that fails (an unreadable machine profile, say) is told, and the program's exit
/// status stays the command's.
fn end_of_run(path: &std::path::Path, torch: bool, no_report: bool, verbose_lines: u64) {
    let trace = torch.then(|| trace_path(path));
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

/// `run.log` / `run.log.gz` → `run.trace.json.gz` (written compressed: traces of compiled
/// models run to hundreds of MB).
pub fn trace_path(log: &std::path::Path) -> PathBuf {
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".gz")
        .unwrap_or(&name)
        .strip_suffix(".log")
        .unwrap_or(name.strip_suffix(".gz").unwrap_or(&name))
        .to_string();
    log.with_file_name(format!("{stem}.trace.json.gz"))
}

/// The child's exit status as ours (a signal becomes 128 + its number, as shells do).
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if let Some(c) = status.code() {
        return ExitCode::from(c.clamp(0, 255) as u8);
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return ExitCode::from((128 + sig).clamp(0, 255) as u8);
    }
    ExitCode::from(1)
}
