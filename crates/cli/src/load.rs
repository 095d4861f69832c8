//! Reading logs into profiles, with a progress bar on terminals: shared by every command.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, Profile, ScanOptions};
use profilednn_verbose::LogInput;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One profile per log, in order.
pub fn profiles(
    logs: &[PathBuf],
    threads: Option<usize>,
    iterations: Option<u64>,
    no_progress: bool,
) -> Result<Vec<Profile>> {
    if logs.iter().filter(|p| p.as_os_str() == "-").count() > 1 {
        bail!("stdin (-) can be given only once");
    }
    let threads = threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let mut profiles = Vec::new();
    for path in logs {
        let input = LogInput::open(path).with_context(|| "cannot read the log".to_string())?;
        let progress = Arc::new(AtomicU64::new(0));
        let bar = progress_bar(&input, no_progress);
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
            &ProfileOptions { iterations },
        ));
    }
    Ok(profiles)
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
