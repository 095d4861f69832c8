//! `advise --project`: the what-if replays the rules need, run in process through oneDNN (as
//! `replay --as/--layout` runs them), then projected as `project` does.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_advice::{Change, Projected, WantedWhatIf};
use profilednn_analysis::Profile;
use profilednn_dnnl::sequence::{steady_iteration, SequenceTiming};
use profilednn_dnnl::Session;
use profilednn_whatif::{Precision, WhatIf};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

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

/// The replay options of an advice what-if.
fn what_if(c: &Change) -> WhatIf {
    WhatIf {
        precision: c.bf16.then_some(Precision::Bf16),
        layout: c.layout,
        batch: None,
    }
}

/// Runs each distinct what-if of `wanted` on the one log and projects it; says on stderr which
/// replays ran, for which rule, and how long they took.
pub fn project(
    logs: &[PathBuf],
    profiles: &[Profile],
    wanted: &[WantedWhatIf],
    dnnl_lib: Option<&Path>,
    no_progress: bool,
) -> Result<Vec<Projected>> {
    let (log, profile) = crate::advice_projections::one_log(logs, profiles, "--project")?;
    if log.as_os_str() == "-" {
        bail!("--project replays the log's steady-state iteration, which reads the log again: save the log to a file");
    }
    let mut todo: Vec<(Change, Vec<&str>)> = Vec::new();
    for w in wanted {
        match todo.iter_mut().find(|(c, _)| *c == w.change) {
            Some((_, rules)) => rules.push(w.rule),
            None => todo.push((w.change, vec![w.rule])),
        }
    }
    if todo.is_empty() {
        eprintln!(
            "profilednn: --project: no rule needs a what-if replay on this log (none of the \
             projection-aware rules is over its threshold)"
        );
        return Ok(Vec::new());
    }
    let session = Session::open(dnnl_lib).map_err(|e| {
        anyhow::anyhow!(
            "--project replays through oneDNN, which could not be loaded: {e}. Give --dnnl-lib \
             PATH (or set PROFILEDNN_DNNL_LIB), or run `profilednn replay LOG --as bf16 … -o R.json` \
             where oneDNN is and pass --replay R.json"
        )
    })?;
    // The log's thread count, whatever OMP_NUM_THREADS says: the projections compare with the
    // log, and one at another count changes the resources, not the work (the rules skip it).
    // Set through the loaded OpenMP runtime (as `plan` does), not the environment, which
    // OpenMP has already read and other threads may be reading.
    let threads = profile.metadata.threads;
    if let Some(n) = threads {
        profilednn_dnnl::threads::set(&session.dnnl, n.into()).map_err(|e| {
            anyhow::anyhow!(
                "--project replays at the log's {n} thread(s): {e}; or run `profilednn replay \
                 LOG --threads {n} --as bf16 … -o R.json` and pass --replay R.json"
            )
        })?;
    }
    let input = profilednn_verbose::LogInput::open(log)
        .with_context(|| format!("{}: cannot read the log", log.display()))?;
    let (calls, from) = steady_iteration(input, profile);
    // The heap the log shows, chosen once for every what-if of this log.
    let bar_heap = bar(no_progress);
    let (timing, heap_why) = profilednn_dnnl::heap_choice::choose(
        &session,
        &calls,
        || profilednn_replay::logged::medians_of(log),
        threads.map(u64::from),
        &SequenceTiming::default(),
        |i, n, what| {
            if let Some(b) = &bar_heap {
                b.set_length(n as u64);
                b.set_position(i as u64);
                b.set_message(what.to_string());
            }
            true
        },
    );
    if let Some(b) = bar_heap {
        b.finish_and_clear();
    }
    // Every change the rules want projects another run of the training: its gradients'
    // copies do not inherit this run's heap accident. The as-logged baseline, which rewrites
    // nothing, is replayed the same way: it is what the change's speed-up is measured against
    // (a run of the script unchanged), and a baseline keeping the log's new pages would credit
    // every change with their cost.
    let (timing, note) = profilednn_dnnl::heap_choice::for_another_run(&timing, &calls);
    let mut out = Vec::new();
    for (change, rules) in todo {
        let w = what_if(&change);
        let bar = bar(no_progress);
        let started = std::time::Instant::now();
        let run = profilednn_dnnl::what_if_run::run(
            &session,
            &calls,
            from.clone(),
            &w,
            &timing,
            |i, n, what| {
                if let Some(b) = &bar {
                    b.set_length(n as u64);
                    b.set_position(i as u64);
                    b.set_message(format!("{}: {what}", w.describe()));
                }
                true
            },
        )
        .with_context(|| format!("{}", log.display()))?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let mut run = run;
        if let Some(why) = &heap_why {
            run.sequence.heap_reason = match note {
                Some(note) => format!("{why}; {note}"),
                None => why.clone(),
            };
        }
        let mut replay = profilednn_dnnl::what_if_run::replay_record(
            &session,
            log.display().to_string(),
            "sequence",
            Some(run.sequence),
            Some(run.record),
            run.results,
        );
        if let Some(n) = threads {
            // What the replay ran at (set above), not the environment's value.
            replay.threads = Some(n.to_string());
        }
        let p = crate::advice_projections::of(log, profile, &replay, "advise --project")?;
        eprintln!(
            "profilednn: replayed `{}` for {} in {:.1} s ({} problems, oneDNN {}): {:.3} → {:.3} {}",
            p.transform,
            rules.join(", "),
            started.elapsed().as_secs_f64(),
            replay.results.len(),
            replay.onednn,
            p.logged_onednn_ms,
            p.projected_onednn_ms,
            p.unit()
        );
        out.push(p);
    }
    Ok(out)
}
