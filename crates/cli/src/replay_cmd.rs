//! `profilednn replay LOG`: re-create and time every unique primitive through oneDNN here.

use crate::progress::{self, Bar};
use crate::replay_args::{Mode, ReplayArgs, RunArg};
use crate::ExitCode;
use anyhow::Result;
use profilednn_analysis::Profile;
use profilednn_dnnl::{LogReplay, Replayed, Replayer, Session};
use profilednn_replay::Replay;
use profilednn_whatif::WhatIf;

pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    refuse_unreplayable(&args)?;
    // OpenMP reads these when oneDNN's runtime starts, so before the library is loaded.
    if let Some(t) = args.threads {
        std::env::set_var("OMP_NUM_THREADS", t.to_string());
    }
    if args.bind {
        std::env::set_var("OMP_PROC_BIND", "close");
        std::env::set_var("OMP_PLACES", "cores");
    }
    let session = match open(&args) {
        Ok(s) => s,
        Err(done) => return done,
    };
    // With the trace, a log without a oneDNN line (an f32 transformer's, whose ops all ran in
    // the BLAS and ATen) is a profile of nothing: the whole step is in the trace.
    let mut profile = crate::load::profile_with(
        &args.log,
        None,
        None,
        args.no_progress,
        args.torch_trace.is_some(),
    )?;
    let units = match &args.torch_trace {
        Some(t) => Some(crate::replay_torch::units(t, &args.log)?),
        None => None,
    };
    // Every problem of the log: coverage is of the whole log, `--top` or not.
    let all_ms: Vec<f64> = profilednn_replay::problems(&profile)
        .iter()
        .map(|p| p.time_ms)
        .collect();
    if let Some(n) = args.top {
        profilednn_replay::keep_heaviest(&mut profile, n);
    }
    let mut replay = replay(&args, &session, &profile)?;
    if let (Some(trace), Some(units)) = (&args.torch_trace, &units) {
        replay.framework = Some(crate::replay_torch::framework(
            &args, trace, units, &profile,
        )?);
    }
    crate::replay_output::write(&args, &replay, &profile, &all_ms)
}

/// The flags that cannot run together, or not on stdin.
fn refuse_unreplayable(args: &ReplayArgs) -> Result<()> {
    if args.what_if().is_some() && args.mode == Mode::Isolated {
        anyhow::bail!(
            "--as, --layout and --batch rewrite the steady-state iteration, which only the sequence replay runs: drop --mode isolated"
        );
    }
    // The sequence replay reads the log a second time for its call order: stdin cannot be.
    if args.mode == Mode::Sequence && args.log.as_os_str() == "-" {
        anyhow::bail!(
            "the sequence replay reads the log twice, so it needs a file, not stdin: save the log \
             to a file, or pass --mode isolated"
        );
    }
    Ok(())
}

/// oneDNN loaded; `Err`: the command's end without it (the whole step alone with a trace, else
/// the error said), or a `--threads` a SYCL build cannot honour.
fn open(args: &ReplayArgs) -> Result<Session, Result<ExitCode>> {
    let session = match (Session::open(args.dnnl_lib.as_deref()), &args.torch_trace) {
        (Ok(s), _) => s,
        (Err(e), Some(trace)) => {
            return Err(crate::replay_torch::without_onednn(
                args,
                trace,
                &e.to_string(),
            ))
        }
        (Err(e), None) => {
            eprintln!("profilednn: error: {e}");
            return Err(Ok(ExitCode::from(1)));
        }
    };
    if let (Some(t), true) = (args.threads, session.is_sycl()) {
        eprintln!(
            "profilednn: error: --threads {t}: this oneDNN ({}) runs its CPU engine on the SYCL \
             CPU device, whose thread count OMP_NUM_THREADS does not set (it uses every core); \
             replay without --threads, or with an OpenMP build (pip install \
             onednn-cpu-gomp==2023.2.0)",
            session.library().display()
        );
        return Err(Ok(ExitCode::from(1)));
    }
    Ok(session)
}

/// The replay of `profile` in the `--mode` asked for, as its results file records it. Ctrl-C
/// stops it between problems (or iterations): the results measured so far are kept, and the
/// rest are listed as interrupted.
fn replay(args: &ReplayArgs, session: &Session, profile: &Profile) -> Result<Replay> {
    let bar = Bar::new(args.no_progress);
    progress::stop_on_interrupt();
    let replayer = Replayer::new(session, &bar);
    let (results, sequence, record) = match args.mode {
        Mode::Isolated => (replayer.isolated(profile, &args.timing()), None, None),
        Mode::Sequence => {
            let r = sequence(args, &replayer, profile, args.what_if().as_ref())?;
            (r.results, Some(r.sequence), r.record)
        }
    };
    bar.finish();
    Ok(replayer.record(
        args.log.display().to_string(),
        args.replay_mode(),
        sequence,
        record,
        results,
    ))
}

/// The sequence replay: the log's steady iteration on the heap the log shows, as logged or
/// rewritten by `what_if`.
fn sequence(
    args: &ReplayArgs,
    replayer: &Replayer,
    profile: &Profile,
    what_if: Option<&WhatIf>,
) -> Result<Replayed> {
    let r = replayer.log(&LogReplay {
        log: &args.log,
        profile,
        keep: args
            .top
            .is_some()
            .then(|| profilednn_replay::problem_keys(profile)),
        timing: args.sequence_timing(),
        what_if,
        threads: args.threads.map(|n| n as u64),
        another_run: args.run.map(|r| r == RunArg::Another),
        as_logged_if_unwritable: args.torch_trace.is_some(),
    })?;
    if let Some(e) = r.unwritable {
        eprintln!(
            "profilednn: {}: the oneDNN primitives cannot be rewritten ({e}): they replay as \
             logged; the whole step's framework ops take the what-if",
            args.log.display()
        );
    }
    Ok(r.replayed)
}
