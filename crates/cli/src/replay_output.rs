//! `replay`'s output: the results file, and its rendering on stdout.

use crate::progress;
use crate::replay_args::ReplayArgs;
use crate::ExitCode;
use anyhow::{Context, Result};
use profilednn_analysis::Profile;
use profilednn_replay::{Replay, SkipReason};

/// Writes the results file and renders it; 130 when Ctrl-C stopped the replay.
pub(crate) fn write(
    args: &ReplayArgs,
    replay: &Replay,
    profile: &Profile,
    all_ms: &[f64],
) -> Result<ExitCode> {
    std::fs::write(&args.output, serde_json::to_string_pretty(replay)? + "\n")
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    let results_file = args.output.display().to_string();
    // Ratios against a polluted log are noise: withheld, as advise withholds its speed-ups.
    let withheld = crate::polluted::of(profile);
    crate::output::write(
        None,
        profilednn_report::replay_text::render(
            replay,
            all_ms,
            &results_file,
            withheld
                .as_ref()
                .map(|w| profilednn_report::replay_text::Withheld {
                    reason: &w.reason,
                    keys: &w.keys,
                })
                .as_ref(),
        ),
    )?;
    eprintln!("profilednn: replay results written to {results_file}");
    if replay.what_if.is_some() {
        return Ok(ExitCode::SUCCESS);
    }
    if progress::interrupted() {
        eprintln!(
            "profilednn: interrupted (Ctrl-C): {} holds the results measured before it; the rest are listed as \"{}\"",
            args.output.display(),
            SkipReason::Interrupted
        );
        // 128 + SIGINT, as a shell reports a command stopped by Ctrl-C.
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
