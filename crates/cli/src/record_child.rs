//! The recorded program as `record` runs it: its log file (plain or gzip), the signals passed
//! on to it, and its output split line by line between the terminal and the log.

use crate::ExitCode;
use anyhow::{Context, Result};
use flate2::write::GzEncoder;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

/// The running child's pid, for the signal handler (0: none).
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

/// Passes SIGINT, SIGTERM and SIGHUP on to `pid` (in a process group of its own, so that a
/// Ctrl-C reaches it exactly once: through us, after which we still finish the log and the
/// report), until [`child_ended`].
pub(crate) fn forward_signals(pid: u32) {
    CHILD.store(pid as i32, Ordering::Relaxed);
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
}

/// The child is reaped: a late signal must not reach a recycled pid.
pub(crate) fn child_ended() {
    CHILD.store(0, Ordering::Relaxed);
}

/// The log being written: gzip when its name ends in `.gz` (fast level: the program's output
/// must not wait for the compressor).
pub(crate) enum Log {
    Plain(BufWriter<std::fs::File>),
    Gz(Box<GzEncoder<BufWriter<std::fs::File>>>),
}

impl Log {
    pub(crate) fn create(path: &Path) -> Result<Log> {
        let file = std::fs::File::create(path)
            .with_context(|| format!("{}: cannot create the log", path.display()))?;
        Ok(if path.extension().is_some_and(|e| e == "gz") {
            Log::Gz(Box::new(GzEncoder::new(
                BufWriter::new(file),
                flate2::Compression::fast(),
            )))
        } else {
            Log::Plain(BufWriter::with_capacity(1 << 20, file))
        })
    }

    pub(crate) fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Log::Plain(w) => w.write_all(b),
            Log::Gz(w) => w.write_all(b),
        }
    }

    pub(crate) fn finish(self) -> std::io::Result<()> {
        match self {
            Log::Plain(mut w) => w.flush(),
            Log::Gz(w) => (*w).finish()?.flush(),
        }
    }
}

/// What went where.
#[derive(Default)]
pub(crate) struct Passed {
    pub verbose_lines: u64,
    pub app_lines: u64,
    /// The ranks whose lines were seen, for the note on a launcher that labelled nothing.
    pub ranks: profilednn_analysis::ranks::launcher::RankWatch,
}

/// Reads the child's stdout to its end: oneDNN verbose lines (with their rank label) into
/// `log`, everything else to our stdout, untouched and right away, so that the program's
/// output stays interactive. A closed stdout (`| head`) does not stop the recording.
pub(crate) fn pass_through(child_stdout: impl Read, log: &mut Log) -> Result<Passed> {
    let mut reader = BufReader::with_capacity(1 << 20, child_stdout);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut line = Vec::with_capacity(4096);
    let mut passed = Passed::default();
    let mut stdout_open = true;
    let mut joiner = profilednn_verbose::launcher_join::Joiner::default();
    let mut failed: Option<std::io::Error> = None;
    // After a failed log write the program's own output still reaches the terminal (the
    // child keeps running, and a stalled pipe would stop it); the error is returned at the end.
    let mut handle = |line: &[u8]| match profilednn_analysis::ranks::launcher::route(line) {
        Some(r) => {
            if !r.terminal.is_empty() && stdout_open {
                stdout_open = out.write_all(r.terminal).and_then(|_| out.flush()).is_ok();
            }
            if failed.is_some() {
                return;
            }
            let written = log
                .write_all(r.label)
                .and_then(|_| log.write_all(r.verbose));
            let written = written.and_then(|_| {
                if line.ends_with(b"\n") {
                    Ok(())
                } else {
                    log.write_all(b"\n")
                }
            });
            if let Err(e) = written {
                failed = Some(e);
                return;
            }
            passed.ranks.see(&r);
            passed.verbose_lines += 1;
        }
        None => {
            passed.app_lines += 1;
            if stdout_open {
                stdout_open = out.write_all(line).and_then(|_| out.flush()).is_ok();
            }
        }
    };
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        joiner.push(&line, &mut handle);
    }
    joiner.finish(&mut handle);
    if let Some(e) = failed {
        return Err(e.into());
    }
    Ok(passed)
}

/// The child's exit status as ours (a signal becomes 128 + its number, as shells do).
pub(crate) fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if let Some(c) = status.code() {
        return ExitCode::from(c.clamp(0, 255) as u8);
    }
    #[cfg(unix)]
    if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return ExitCode::from((128 + sig).clamp(0, 255) as u8);
    }
    ExitCode::from(1)
}
