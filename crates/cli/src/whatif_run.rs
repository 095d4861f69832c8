//! `advise --project`: the what-if replays the rules need, run in process through oneDNN (as
//! `replay --as/--layout` runs them), then projected as `project` does.

use crate::progress::Bar;
use anyhow::{bail, Context, Result};
use profilednn_advice::{Change, Projected, WantedWhatIf};
use profilednn_analysis::Profile;
use profilednn_dnnl::sequence::SequenceTiming;
use profilednn_dnnl::{HeapPlan, Prefixed, Replayer, Session, Steady};
use profilednn_project::wanted_replays;
use std::path::{Path, PathBuf};

/// Runs each distinct what-if of `wanted` on the one log of `logs` (read into `profiles`) and
/// projects it; says on stderr which replays ran, for which rule, and how long they took.
/// `whole_step`: the caller replays the whole step through PyTorch after these (said when these
/// are none).
pub fn project(
    (logs, profiles): (&[PathBuf], &[Profile]),
    wanted: &[WantedWhatIf],
    (dnnl_lib, no_progress, whole_step): (Option<&Path>, bool, bool),
) -> Result<Vec<Projected>> {
    let (log, profile) = profilednn_project::advice::one_log(logs, profiles, "--project")?;
    if log.as_os_str() == "-" {
        bail!("--project replays the log's steady-state iteration, which reads the log again: save the log to a file");
    }
    let todo = wanted_replays::distinct(wanted);
    if todo.is_empty() {
        eprintln!(
            "profilednn: {}",
            wanted_replays::nothing_to_replay(whole_step)
        );
        return Ok(Vec::new());
    }
    let session = open(dnnl_lib, profile.metadata.threads)?;
    let (steady, heap) = steady_and_heap(&session, log, profile, no_progress)?;
    let at = Steadied {
        session: &session,
        log,
        profile,
        steady: &steady,
        heap: &heap,
        no_progress,
    };
    todo.into_iter()
        .map(|(change, rules)| at.project(&change, &rules))
        .collect()
}

/// oneDNN, loaded and set to the log's `threads`.
fn open(dnnl_lib: Option<&Path>, threads: Option<u32>) -> Result<Session> {
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
    if let Some(n) = threads {
        session.set_threads(n.into()).map_err(|e| {
            anyhow::anyhow!(
                "--project replays at the log's {n} thread(s): {e}; or run `profilednn replay \
                 LOG --threads {n} --as bf16 … -o R.json` and pass --replay R.json"
            )
        })?;
    }
    Ok(session)
}

/// The log's steady-state iteration, and the heap of another run of the training for it.
fn steady_and_heap(
    session: &Session,
    log: &Path,
    profile: &Profile,
    no_progress: bool,
) -> Result<(Steady, HeapPlan)> {
    let bar_heap = Bar::new(no_progress);
    let replayer = Replayer::new(session, &bar_heap);
    let steady = replayer.steady(log, profile)?;
    // The heap the log shows, chosen once for every what-if of this log.
    let threads = profile.metadata.threads.map(u64::from);
    let heap = replayer.heap(log, &steady, threads, &SequenceTiming::default());
    bar_heap.finish();
    // Every change the rules want projects another run of the training: its gradients'
    // copies do not inherit this run's heap accident. The as-logged baseline, which rewrites
    // nothing, is replayed the same way: it is what the change's speed-up is measured against
    // (a run of the script unchanged), and a baseline keeping the log's new pages would credit
    // every change with their cost.
    let (heap, _) = heap.another_run(&steady);
    Ok((steady, heap))
}

/// A log's steady-state iteration, ready for its what-ifs.
struct Steadied<'a> {
    session: &'a Session,
    log: &'a Path,
    profile: &'a Profile,
    steady: &'a Steady,
    heap: &'a HeapPlan,
    no_progress: bool,
}

impl Steadied<'_> {
    /// Replays `change` (wanted by `rules`) and projects it as `project` does.
    fn project(&self, change: &Change, rules: &[&str]) -> Result<Projected> {
        let w = wanted_replays::what_if(change);
        let bar = Bar::new(self.no_progress);
        let started = std::time::Instant::now();
        let phase = Prefixed {
            inner: &bar,
            prefix: w.describe(),
        };
        let replayer = Replayer::new(self.session, &phase);
        let run = replayer
            .what_if(self.steady, &w, self.heap)
            .with_context(|| format!("{}", self.log.display()))?;
        // The thread count is the one set by [`open`], which the record states.
        let replay = replayer.record(
            self.log.display().to_string(),
            profilednn_replay::Mode::Sequence,
            Some(run.sequence),
            run.record,
            run.results,
        );
        bar.finish();
        let p = crate::advice_projections::of(self.log, self.profile, &replay, "advise --project")?;
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
        Ok(p)
    }
}
