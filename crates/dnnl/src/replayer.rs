//! The replay pipeline, written once for `replay`, `advise --project` and `plan`: open the log
//! again, cut its steady-state iteration, choose the per-call heap the log shows, decide
//! whether the replay projects the logged run or another one, replay (as logged, rewritten by
//! a what-if, or as one rank of a split) and make the results file's record.

use crate::heap_choice;
use crate::rank::RankReplay;
use crate::run::Timing;
use crate::sequence::{replay_sequence, ResultsFor, SequenceTiming};
use crate::what_if_run;
use crate::{Progress, ReplayError, Session};
use profilednn_analysis::Profile;
use profilednn_replay::sequence::SequenceSummary;
use profilednn_replay::{Replay, ReplayResult, SCHEMA};
use profilednn_whatif::{Record, TransformError, WhatIf};
use std::path::Path;

/// Replays through one session, reporting to one [`Progress`] (which also says when to stop).
pub struct Replayer<'a> {
    session: &'a Session,
    progress: &'a dyn Progress,
}

pub use profilednn_analysis::steady_calls::Steady;

/// The sequence timing with the per-call heap chosen for a log, and why (`None`: nothing was
/// chosen — given, or every tensor allocated once).
#[derive(Clone)]
pub struct HeapPlan {
    pub timing: SequenceTiming,
    pub why: Option<String>,
}

/// What a sequence replay measured: per problem, the iteration's summary, and the what-if
/// record when the iteration was rewritten.
pub struct Replayed {
    pub results: Vec<ReplayResult>,
    pub sequence: SequenceSummary,
    pub record: Option<Record>,
}

impl<'a> Replayer<'a> {
    pub fn new(session: &'a Session, progress: &'a dyn Progress) -> Replayer<'a> {
        Replayer { session, progress }
    }

    pub fn session(&self) -> &'a Session {
        self.session
    }

    /// Opens `log` again and cuts its steady-state iteration (`profile` is the log's, for its
    /// iteration count).
    pub fn steady(&self, log: &Path, profile: &Profile) -> Result<Steady, ReplayError> {
        let input = profilednn_verbose::LogInput::open(log).map_err(|source| ReplayError::Log {
            path: log.to_path_buf(),
            source,
        })?;
        Ok(profilednn_analysis::steady_calls::steady_iteration(
            input, profile,
        ))
    }

    /// The heap `log` shows for the calls of `steady`, on top of `timing` (see
    /// [`heap_choice::choose`]); `log_threads`: the log's thread count.
    pub fn heap(
        &self,
        log: &Path,
        steady: &Steady,
        log_threads: Option<u64>,
        timing: &SequenceTiming,
    ) -> HeapPlan {
        let (timing, why) = heap_choice::choose(
            self.session,
            &steady.calls,
            || {
                (log.as_os_str() != "-")
                    .then(|| profilednn_replay::logged::medians_of(log))
                    .flatten()
            },
            log_threads,
            timing,
            self.progress,
        );
        HeapPlan { timing, why }
    }

    /// Whether a replay of `steady`, rewritten by `what_if` and run at `threads` (`None`: the
    /// runtime's count), projects another run of the training than the logged one (see
    /// [`heap_choice::is_another_run`]).
    pub fn is_another_run(
        &self,
        steady: &Steady,
        what_if: Option<&WhatIf>,
        threads: Option<u64>,
        log_threads: Option<u64>,
    ) -> bool {
        let rewrites = what_if.is_some_and(|w| {
            profilednn_whatif::apply(w, &steady.calls)
                .map_or(true, |t| !t.changes_nothing(&steady.calls))
        });
        let replay_threads = threads.or_else(|| self.session.threads());
        heap_choice::is_another_run(rewrites, replay_threads, log_threads)
    }

    /// Replays `steady` as logged, its results for the problems of `profile`.
    pub fn as_logged(&self, steady: &Steady, heap: &HeapPlan, profile: &Profile) -> Replayed {
        let (results, sequence) = replay_sequence(
            self.session,
            ResultsFor::Log(profile),
            &steady.calls,
            steady.from.clone(),
            &heap.timing,
            self.progress,
        );
        heap.explain(Replayed {
            results,
            sequence,
            record: None,
        })
    }

    /// Replays `steady` rewritten by `w`.
    pub fn what_if(
        &self,
        steady: &Steady,
        w: &WhatIf,
        heap: &HeapPlan,
    ) -> Result<Replayed, TransformError> {
        let run = what_if_run::run(
            self.session,
            &steady.calls,
            steady.from.clone(),
            w,
            &heap.timing,
            self.progress,
        )?;
        Ok(heap.explain(Replayed {
            results: run.results,
            sequence: run.sequence,
            record: Some(run.record),
        }))
    }

    /// Replays every problem of `profile` in its own loop (benchdnn's view).
    pub fn isolated(&self, profile: &Profile, timing: &Timing) -> Vec<ReplayResult> {
        crate::replay_profile(self.session, profile, timing, self.progress)
    }

    /// Replays `steady` as one rank of a split: at `threads` threads and mini-batch `batch`.
    pub fn rank(
        &self,
        steady: &Steady,
        threads: u64,
        batch: u64,
        timing: &SequenceTiming,
    ) -> Result<RankReplay, String> {
        crate::rank::rank(
            self.session,
            &steady.calls,
            &steady.from,
            threads,
            batch,
            timing,
            self.progress,
        )
    }

    /// The results file of a replay of `source` in `mode` on this
    /// machine: the CPU, and the OpenMP settings — the thread count the session set, else as
    /// oneDNN read them from the environment.
    pub fn record(
        &self,
        source: String,
        mode: profilednn_replay::Mode,
        sequence: Option<SequenceSummary>,
        what_if: Option<Record>,
        results: Vec<ReplayResult>,
    ) -> Replay {
        let s = self.session;
        Replay {
            schema: SCHEMA.into(),
            source,
            onednn: s.version().to_string(),
            library: s.library().display().to_string(),
            onednn_isa: Some(crate::api::cpu_isa::name(s.dnnl.isa).to_string()),
            cpu: profilednn_machine::cpu::model_name(),
            threads: s.recorded_threads(),
            binding: s.binding(),
            mode,
            sequence,
            what_if,
            results,
            framework: None,
        }
    }
}

impl HeapPlan {
    /// The heap for another run of the training (see [`heap_choice::for_another_run`]), its
    /// reason joined to the log's, and that note alone.
    pub fn another_run(&self, steady: &Steady) -> (HeapPlan, Option<&'static str>) {
        let (timing, note) = heap_choice::for_another_run(&self.timing, &steady.calls);
        let why = match (&self.why, note) {
            (Some(why), Some(note)) => Some(format!("{why}; {note}")),
            (why, _) => why.clone(),
        };
        (HeapPlan { timing, why }, note)
    }

    /// `r` with the summary's heap reason this choice's, when there was one.
    fn explain(&self, mut r: Replayed) -> Replayed {
        if let Some(why) = &self.why {
            r.sequence.heap_reason = why.clone();
        }
        r
    }
}
