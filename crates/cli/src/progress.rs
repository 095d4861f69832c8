//! The terminal's side of a replay's [`Progress`]: a progress bar, and Ctrl-C. The signal
//! handler can only store to a static (storing to an atomic is async-signal-safe), so the flag
//! lives here, in the program, not in the library.

use indicatif::{ProgressBar, ProgressStyle};
use profilednn_dnnl::Progress;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// From now on, Ctrl-C stops a replay between problems (or iterations) instead of the
/// process: the results measured so far are kept.
pub fn stop_on_interrupt() {
    #[cfg(unix)]
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// Whether Ctrl-C was pressed since [`stop_on_interrupt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// A progress bar on a terminal (`{msg} [bar] i/n eta`), none otherwise or with `no_progress`.
pub fn bar(no_progress: bool) -> Option<ProgressBar> {
    (!no_progress && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template("{msg:40!} [{bar:30}] {pos}/{len} eta {eta}")
                .expect("template"),
        );
        b
    })
}

/// A replay's progress on a [`bar`] (if any); stopped by Ctrl-C.
pub struct Bar(Option<ProgressBar>);

impl Bar {
    pub fn new(no_progress: bool) -> Bar {
        Bar(bar(no_progress))
    }

    /// Clears the bar off the terminal.
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn step(&self, i: usize, n: usize, what: &str) {
        if let Some(b) = &self.0 {
            b.set_length(n as u64);
            b.set_position(i as u64);
            b.set_message(what.to_string());
        }
    }

    fn stopped(&self) -> bool {
        interrupted()
    }
}
