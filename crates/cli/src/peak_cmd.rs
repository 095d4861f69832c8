//! `profilednn peak`: measure this machine's compute peaks and memory bandwidth.

use crate::format::Format;
use crate::ExitCode;
use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_machine::cpu;
use profilednn_machine::measure::{measure, Effort};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct PeakArgs {
    /// Write the machine profile here (default: the per-user profile that `report` picks up,
    /// ~/.config/profilednn/machine.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Fewer runs and shorter compute loops. The bandwidth sweep still ends on a set beyond the
    /// last-level cache (4× it: 1200 MiB with a 300 MiB L3), so its memory roof is DRAM's.
    #[arg(long)]
    quick: bool,
    /// Threads for the all-core figures (default: all hardware threads).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// `table` (the terminal) or `json` (the profile, `profilednn.machine.v2`).
    #[arg(long, default_value = "table", value_parser = Format::only(&[Format::Table, Format::Json]))]
    format: Format,
    /// Print the profile as JSON instead of tables: as `--format json`.
    #[arg(long)]
    json: bool,
    /// Save the profile as the default one even when the measurement looks contaminated (an
    /// all-core figure that did not scale).
    #[arg(long)]
    force: bool,
}

/// Where the measured profile goes, or why it does not.
#[derive(Debug, PartialEq)]
enum Save {
    To(PathBuf),
    /// The default profile is not overwritten with a suspect measurement: `report` and
    /// `advise` would pick its too-low roofs up silently on every later run.
    Withheld(String),
}

/// A file given with `-o` is written whatever the measurement (the user named it, and the
/// suspicions are printed beside it); the default profile only when nothing looks off, or
/// with `--force`.
fn destination(
    output: Option<PathBuf>,
    default: impl FnOnce() -> Result<PathBuf>,
    suspicions: &[String],
    force: bool,
) -> Result<Save> {
    if let Some(p) = output {
        return Ok(Save::To(p));
    }
    let path = default()?;
    if suspicions.is_empty() || force {
        return Ok(Save::To(path));
    }
    Ok(Save::Withheld(format!(
        "not saved as the default machine profile {}: the measurement looks contaminated \
         ({} suspect figure(s) above), and its roofs would be used by every later report. \
         Re-run `profilednn peak` on an idle machine (check `uptime` and `top`), or keep it \
         anyway with `profilednn peak --force` (or `-o FILE` to write it elsewhere)",
        path.display(),
        suspicions.len()
    )))
}

pub fn run(args: PeakArgs) -> Result<ExitCode> {
    let threads = args.threads.unwrap_or_else(cpu::threads).max(1);
    let effort = if args.quick {
        Effort::quick(threads)
    } else {
        Effort::standard(threads)
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(ProgressStyle::with_template("{spinner} measuring {msg} [{elapsed}]").unwrap());
        b.enable_steady_tick(Duration::from_millis(120));
        b
    });
    let profile = measure(effort, &mut |step| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let json = serde_json::to_string_pretty(&profile)? + "\n";
    if args.format.or_json(args.json) == Format::Json {
        crate::output::write(None, json.clone())?;
    } else {
        crate::output::write(None, profilednn_report::machine::render(&profile))?;
    }
    let default = || {
        profilednn_project::machine_file::default_path()
            .context("no HOME or XDG_CONFIG_HOME to save the profile in; pass -o FILE")
    };
    let path = match destination(args.output, default, &profile.suspicions(), args.force)? {
        Save::To(p) => p,
        Save::Withheld(why) => {
            eprintln!("profilednn peak: {why}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    crate::output::write_file(&path, &json)?;
    eprintln!("machine profile written to {}", path.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default() -> Result<PathBuf> {
        Ok(PathBuf::from("/home/u/.config/profilednn/machine.json"))
    }

    #[test]
    fn a_contaminated_measurement_is_not_saved_as_the_default_profile() {
        let suspect = vec!["bf16 (avx512_bf16): only 1.09x".to_string()];
        match destination(None, default, &suspect, false).unwrap() {
            Save::Withheld(why) => {
                for want in [
                    "not saved as the default machine profile /home/u/.config/profilednn/machine.json",
                    "1 suspect figure(s)",
                    "on an idle machine",
                    "profilednn peak --force",
                ] {
                    assert!(why.contains(want), "missing «{want}» in {why}");
                }
            }
            s => panic!("saved: {s:?}"),
        }
        // --force saves it; so does a clean measurement; -o FILE is written either way.
        assert_eq!(
            destination(None, default, &suspect, true).unwrap(),
            Save::To(default().unwrap())
        );
        assert_eq!(
            destination(None, default, &[], false).unwrap(),
            Save::To(default().unwrap())
        );
        let f = PathBuf::from("m.json");
        assert_eq!(
            destination(Some(f.clone()), default, &suspect, false).unwrap(),
            Save::To(f)
        );
    }
}
