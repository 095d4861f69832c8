//! `profilednn replay LOG`: re-create and time every unique primitive through oneDNN here.

use crate::progress::{self, Bar};
use crate::replay_args::{AsType, LayoutArg, Mode, ReplayArgs, RunArg};
use crate::ExitCode;
use anyhow::{Context, Result};
use profilednn_analysis::Profile;
use profilednn_dnnl::{Replayed, Replayer, Session};
use profilednn_replay::{Replay, SkipReason};
use profilednn_whatif::WhatIf;

pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    let what_if = args.what_if();
    if what_if.is_some() && args.mode == Mode::Isolated {
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
    // OpenMP reads these when oneDNN's runtime starts, so before the library is loaded.
    if let Some(t) = args.threads {
        std::env::set_var("OMP_NUM_THREADS", t.to_string());
    }
    if args.bind {
        std::env::set_var("OMP_PROC_BIND", "close");
        std::env::set_var("OMP_PLACES", "cores");
    }
    let session = match (Session::open(args.dnnl_lib.as_deref()), &args.torch_trace) {
        (Ok(s), _) => s,
        (Err(e), Some(trace)) => return without_onednn(&args, trace, &e.to_string()),
        (Err(e), None) => {
            eprintln!("profilednn: error: {e}");
            return Ok(ExitCode::from(1));
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
        return Ok(ExitCode::from(1));
    }
    let mut profile = crate::load::profile(&args.log, None, None, args.no_progress)?;
    // Every problem of the log: coverage is of the whole log, `--top` or not.
    let all_ms: Vec<f64> = profilednn_replay::problems(&profile)
        .iter()
        .map(|p| p.time_ms)
        .collect();
    if let Some(n) = args.top {
        profilednn_replay::keep_heaviest(&mut profile, n);
    }
    let bar = Bar::new(args.no_progress);
    // Ctrl-C stops the replay between problems (or iterations): the results measured so far
    // are written, and the rest are listed as interrupted.
    progress::stop_on_interrupt();
    let replayer = Replayer::new(&session, &bar);
    let (results, sequence, record) = match args.mode {
        Mode::Isolated => (replayer.isolated(&profile, &args.timing()), None, None),
        Mode::Sequence => {
            let r = sequence(&args, &replayer, &profile, what_if.as_ref())?;
            (r.results, Some(r.sequence), r.record)
        }
    };
    bar.finish();
    let mut replay = replayer.record(
        args.log.display().to_string(),
        args.replay_mode(),
        sequence,
        record,
        results,
    );
    if let Some(trace) = &args.torch_trace {
        replay.framework = Some(framework(&args, trace, &profile)?);
    }
    write(&args, &replay, &profile, &all_ms)
}

/// The sequence replay: the log's steady iteration on the heap the log shows, as logged or
/// rewritten by `what_if`.
fn sequence(
    args: &ReplayArgs,
    replayer: &Replayer,
    profile: &Profile,
    what_if: Option<&WhatIf>,
) -> Result<Replayed> {
    let mut steady = replayer.steady(&args.log, profile)?;
    if args.top.is_some() {
        let keep = profilednn_replay::problem_keys(profile);
        steady
            .calls
            .retain(|p| keep.contains(&profilednn_benchdnn::problem_key(p)));
    }
    let log_threads = profile.metadata.threads.map(u64::from);
    let mut heap = replayer.heap(&args.log, &steady, log_threads, &args.sequence_timing());
    // A rewrite, or another thread count (given, or the runtime's default), projects another
    // run of the training: its gradients' copies do not inherit this run's heap accident.
    let another = match args.run {
        Some(r) => r == RunArg::Another,
        None => {
            let threads = args.threads.map(|n| n as u64);
            replayer.is_another_run(&steady, what_if, threads, log_threads)
        }
    };
    if another {
        heap = heap.another_run(&steady).0;
    }
    let Some(w) = what_if else {
        return Ok(replayer.as_logged(&steady, &heap, profile));
    };
    // With --torch-trace a rewrite that cannot be made falls back to the iteration as logged:
    // the whole step does not need the primitives rewritten (its framework ops, those that
    // run in oneDNN included, replay through PyTorch).
    match replayer.what_if(&steady, w, &heap) {
        Ok(r) => Ok(r),
        Err(e) if args.torch_trace.is_some() => {
            eprintln!(
                "profilednn: {}: the oneDNN primitives cannot be rewritten ({e}): they replay as \
                 logged; the whole step's framework ops take the what-if",
                args.log.display()
            );
            Ok(replayer.as_logged(&steady, &heap, profile))
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("{}", args.log.display()))),
    }
}

/// `--torch-trace` where no oneDNN can be loaded: the whole step replays through PyTorch (its
/// oneDNN calls among its ops, in PyTorch's own oneDNN), and the results file holds no
/// primitive of the log (`project` carries the log's oneDNN figures over).
fn without_onednn(args: &ReplayArgs, trace: &std::path::Path, why: &str) -> Result<ExitCode> {
    eprintln!(
        "profilednn: no oneDNN to load ({why}): the log's primitives are not replayed; the whole \
         step replays through PyTorch, whose ops call its own oneDNN"
    );
    let profile = crate::load::profile(&args.log, None, None, args.no_progress)?;
    let replay = Replay {
        schema: profilednn_replay::SCHEMA.into(),
        source: args.log.display().to_string(),
        onednn: "not loaded".into(),
        library: String::new(),
        onednn_isa: None,
        cpu: profilednn_machine::cpu::model_name(),
        threads: args.threads.map(|t| t.to_string()),
        binding: None,
        mode: args.replay_mode(),
        sequence: None,
        what_if: None,
        results: Vec::new(),
        framework: Some(framework(args, trace, &profile)?),
    };
    write(args, &replay, &profile, &[])
}

/// The whole step's framework ops, replayed through PyTorch from the profiler trace.
fn framework(
    args: &ReplayArgs,
    trace: &std::path::Path,
    profile: &Profile,
) -> Result<profilednn_replay::framework::FrameworkReplay> {
    if args.layout == LayoutArg::Plain {
        eprintln!(
            "profilednn: --layout plain rewrites the oneDNN primitives only: the framework ops \
             replay in their recorded layout"
        );
    }
    crate::torch_step::replay(&crate::torch_step::StepArgs {
        trace,
        python: args.python.as_deref(),
        threads: args
            .threads
            .map(|t| t as u64)
            .or(profile.metadata.threads.map(u64::from)),
        bf16: args.as_type == Some(AsType::Bf16),
        channels_last: args.layout == LayoutArg::ChannelsLast,
        batch: args.batch,
        warmup: args.warmup,
    })
}

/// Writes the results file and renders it; 130 when Ctrl-C stopped the replay.
fn write(
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
