//! `plan`'s oneDNN replays: one rank of every valid split, at its threads and mini-batch, with
//! the per-call heap the log shows.

use crate::plan_args::PlanArgs;
use anyhow::Result;
use profilednn_dnnl::sequence::SequenceTiming;
use profilednn_dnnl::{Quiet, Replayer, Session, Steady};
use profilednn_project::plan::Plan;

/// Replays one rank of every valid split, fewest threads last (the order does not matter to
/// oneDNN: primitives are created afresh at each thread count).
pub fn replay_rows(
    args: &PlanArgs,
    plan: &mut Plan,
    steady: &Steady,
    log_threads: Option<u64>,
) -> Result<()> {
    let session = Session::open(args.dnnl_lib.as_deref()).map_err(|e| {
        anyhow::anyhow!("{e} (`--dry-run` plans without oneDNN: splits, all-reduce and memory)")
    })?;
    let replayer = Replayer::new(&session, &Quiet);
    let timing = SequenceTiming {
        warmup: args.warmup,
        ..Default::default()
    };
    // The heap the log shows, as `replay` reads it: every split runs in the same framework.
    let logged = replayer.heap(&args.log, steady, log_threads, &timing);
    // A split other than the logged one (its threads and mini-batch) is another run of the
    // training: its gradients' copies do not inherit this run's heap accident.
    let (another, another_why) = logged.another_run(steady);
    if let (Some(h), Some(why)) = (logged.timing.heap, &logged.why) {
        plan.assumptions
            .push(format!("per-call buffers: heap {} ({why})", h.as_str()));
        if let (Some(note), Some(h)) = (another_why, another.timing.heap) {
            plan.assumptions.push(format!(
                "per-call buffers of the splits other than the logged one: heap {} ({note})",
                h.as_str()
            ));
        }
    }
    let logged_batch = plan.logged_batch;
    // A log without a thread count ran on the planned cores, its ranks sharing them (as the
    // plan's time outside oneDNN assumes).
    let threads_without_nthr = (plan.cores / plan.logged_ranks.max(1)).max(1);
    let todo = plan.to_replay();
    for (split, threads, batch) in todo {
        eprintln!("profilednn: replaying split {split}: {threads} thread(s), mini-batch {batch}");
        let logged_split = batch == logged_batch
            && !profilednn_dnnl::heap_choice::is_another_run(
                false,
                Some(threads),
                log_threads.or(Some(threads_without_nthr)),
            );
        let heap = if logged_split { &logged } else { &another };
        match replayer.rank(steady, threads, batch, &heap.timing) {
            Ok(r) => {
                plan.set_compute(split, r.onednn_ms);
                if r.not_replayed > 0 {
                    plan.note(
                        split,
                        format!(
                            "{} of {} problems not replayed (not in compute)",
                            r.not_replayed, r.problems
                        ),
                    );
                }
            }
            Err(e) => plan.note(split, format!("not replayed: {e}")),
        }
    }
    Ok(())
}
