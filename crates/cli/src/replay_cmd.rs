//! `profilednn replay LOG`: re-create and time every unique primitive through oneDNN here.

use crate::ExitCode;
use anyhow::{Context, Result};
use clap::Args;
use profilednn_dnnl::run::Timing;
use profilednn_dnnl::{heap_choice, replay_profile, sequence, Session};
use profilednn_replay::allocation::{Allocation, Heap};
use profilednn_replay::SkipReason;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReplayArgs {
    /// The oneDNN verbose log to replay (plain or gzip; a file: sequence replay reads it twice).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Results file (JSON, `profilednn.replay.v1`), input of `profilednn project --replay`.
    #[arg(long, short = 'o', default_value = "replay.json")]
    output: PathBuf,
    /// oneDNN library to load (default: $PROFILEDNN_DNNL_LIB, a pip-installed onednn-cpu-gomp,
    /// then the system library path).
    #[arg(long, value_name = "PATH")]
    dnnl_lib: Option<PathBuf>,
    /// OpenMP threads for oneDNN (sets OMP_NUM_THREADS; default: the runtime's own choice).
    #[arg(long)]
    threads: Option<usize>,
    /// Bind threads to cores (OMP_PROC_BIND=close, OMP_PLACES=cores).
    #[arg(long)]
    bind: bool,
    /// Replay only the N problems with the most time in the log.
    #[arg(long, value_parser = crate::load::count_usize)]
    top: Option<usize>,
    /// Untimed runs first: of each problem (isolated) or of the whole iteration (sequence).
    #[arg(long, default_value_t = Timing::default().warmup)]
    warmup: u32,
    /// Isolated mode: at least this many timed runs per problem.
    #[arg(long, default_value_t = Timing::default().min_runs)]
    min_runs: u32,
    /// Isolated mode: at most this many timed runs per problem.
    #[arg(long, default_value_t = Timing::default().max_runs)]
    max_runs: u32,
    /// Keep timing a primitive until this many ms were measured.
    #[arg(long, default_value_t = Timing::default().min_time_ms)]
    min_time_ms: f64,
    /// No progress bar on the terminal (it is shown only on a terminal, for long inputs).
    #[arg(long)]
    no_progress: bool,
    /// `sequence`: one steady-state iteration re-run in log order (each call finds the caches
    /// the previous primitives left, as in training); `isolated`: each problem timed in its
    /// own loop (benchdnn's view).
    #[arg(long, value_enum, default_value_t = Mode::Sequence)]
    mode: Mode,
    /// What-if: run convolutions, inner products, matmuls and RNNs in this type, as PyTorch's
    /// CPU autocast does (`bf16`: f32 accumulation, autocast's casts added and priced), instead
    /// of the logged one (sequence mode; see docs/projection.md).
    #[arg(long = "as", value_enum, value_name = "TYPE")]
    as_type: Option<AsType>,
    /// What-if: activations in this layout (`channels-last`: acdb/acdeb, `plain`: abcd/abcde),
    /// convolution weights chosen by oneDNN; the layout reorders it makes copies removed.
    #[arg(long, value_enum, default_value_t = LayoutArg::AsLogged)]
    layout: LayoutArg,
    /// What-if: the mini-batch of every problem of the iteration set to N.
    #[arg(long, value_name = "N", value_parser = crate::load::count)]
    batch: Option<u64>,
    /// Sequence mode: how each call's memory is allocated. `per-call`: each call's scratchpad
    /// (and a weight gradient's copy, per iteration) allocated around it, as PyTorch's
    /// allocator does, from the heap `--heap` says; `once`: every tensor before the loop, as a C program does. Default: per
    /// call when (nearly) every call of the log has a user scratchpad (a framework's), else once.
    #[arg(long, value_enum)]
    allocation: Option<AllocationArg>,
    /// Per-call allocation: `warm`, freed buffers' pages kept for the next call of the same
    /// size (no page faults after the first iteration); `cold`, new pages for every buffer
    /// (each call faults its scratchpad and gradient copy in); `glibc`, the C heap (either,
    /// varying from run to run). Default: as the log shows, from two short replays of its
    /// iteration — new pages for the kinds of buffer (the reorders' gradient copies, the other
    /// primitives' scratchpads) whose logged calls ran as on new pages, kept pages for the rest
    /// (see docs/projection.md).
    #[arg(long, value_enum)]
    heap: Option<HeapArg>,
    /// Per-call allocation with the heap read from the log: whether the replay projects the
    /// `logged` run (its buffers' pages as the log shows them) or `another` run of the
    /// training, whose gradients' copies keep their pages whatever the log's did (whether a
    /// heap gives them back each iteration is an accident of each run). Default: another when a
    /// what-if rewrites a call or the thread count differs from the log's, else logged. To set
    /// a what-if against an as-logged replay by hand, like with like: `--run another` on both.
    #[arg(long, value_enum)]
    run: Option<RunArg>,
    /// The whole step: the PyTorch profiler trace recorded with the log (`record --torch`);
    /// the framework ops of its steady iteration are replayed through PyTorch too (`--as
    /// bf16`, `--threads`, `--layout channels-last` and `--batch` apply to them), into the
    /// results' `framework` section.
    #[arg(long, value_name = "TRACE")]
    torch_trace: Option<PathBuf>,
    /// The Python (with torch) that replays the framework ops (default:
    /// $PROFILEDNN_TORCH_PYTHON, the running interpreter, then python3).
    #[arg(long, value_name = "PATH", requires = "torch_trace")]
    python: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RunArg {
    Logged,
    Another,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum HeapArg {
    Warm,
    Cold,
    Glibc,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum AllocationArg {
    Once,
    PerCall,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum AsType {
    Bf16,
    F32,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LayoutArg {
    AsLogged,
    ChannelsLast,
    Plain,
}

extern "C" fn on_interrupt(_sig: libc::c_int) {
    profilednn_dnnl::STOP.store(true, std::sync::atomic::Ordering::Relaxed);
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Sequence,
    Isolated,
}

pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    use profilednn_whatif::{Layout, Precision, WhatIf};
    let what_if = WhatIf {
        precision: args.as_type.map(|a| match a {
            AsType::Bf16 => Precision::Bf16,
            AsType::F32 => Precision::F32,
        }),
        layout: match args.layout {
            LayoutArg::AsLogged => Layout::AsLogged,
            LayoutArg::ChannelsLast => Layout::ChannelsLast,
            LayoutArg::Plain => Layout::Plain,
        },
        batch: args.batch,
    };
    let what_if = (!what_if.is_identity()).then_some(what_if);
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
    let session = match Session::open(args.dnnl_lib.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("profilednn: error: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    if let (Some(t), true) = (
        args.threads,
        session.dnnl.cpu_runtime == profilednn_dnnl::api::RUNTIME_SYCL,
    ) {
        eprintln!(
            "profilednn: error: --threads {t}: this oneDNN ({}) runs its CPU engine on the SYCL \
             CPU device, whose thread count OMP_NUM_THREADS does not set (it uses every core); \
             replay without --threads, or with an OpenMP build (pip install \
             onednn-cpu-gomp==2023.2.0)",
            session.dnnl.api.path.display()
        );
        return Ok(ExitCode::from(1));
    }
    let mut profile = crate::load::profile(&args.log, None, None, args.no_progress)?;
    // Every problem of the log: coverage is of the whole log, `--top` or not.
    let all_problems = profilednn_replay::problems(&profile);
    if let Some(n) = args.top {
        // Keep the entries of the heaviest problems.
        let keep: std::collections::HashSet<&str> = all_problems
            .iter()
            .take(n)
            .map(|x| x.key.as_str())
            .collect();
        profile
            .entries
            .retain(|e| keep.contains(profilednn_benchdnn::problem_key(&e.primitive).as_str()));
    }
    let timing = Timing {
        warmup: args.warmup,
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        min_time_ms: args.min_time_ms,
    };
    let bar = crate::whatif_run::bar(args.no_progress);
    // Ctrl-C stops the replay between problems (or iterations): the results measured so far
    // are written, and the rest are listed as interrupted.
    #[cfg(unix)]
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let progress = |i: usize, n: usize, what: &str| {
        if let Some(b) = &bar {
            b.set_length(n as u64);
            b.set_position(i as u64);
            b.set_message(what.to_string());
        }
        !profilednn_dnnl::STOP.load(std::sync::atomic::Ordering::Relaxed)
    };
    let mut record = None;
    let (results, sequence) = match args.mode {
        Mode::Isolated => (replay_profile(&session, &profile, &timing, progress), None),
        Mode::Sequence => {
            let input = profilednn_verbose::LogInput::open(&args.log)
                .with_context(|| format!("{}: cannot read the log", args.log.display()))?;
            let (mut calls, from) = sequence::steady_iteration(input, &profile);
            if args.top.is_some() {
                let keep: std::collections::HashSet<String> = profilednn_replay::problems(&profile)
                    .into_iter()
                    .map(|x| x.key)
                    .collect();
                calls.retain(|p| keep.contains(&profilednn_benchdnn::problem_key(p)));
            }
            let st = sequence::SequenceTiming {
                warmup: args.warmup,
                allocation: args.allocation.map(|a| match a {
                    AllocationArg::Once => Allocation::Once,
                    AllocationArg::PerCall => Allocation::PerCall,
                }),
                heap: args.heap.map(|h| match h {
                    HeapArg::Warm => Heap::Warm,
                    HeapArg::Cold => Heap::Cold,
                    HeapArg::Glibc => Heap::Glibc,
                }),
                ..Default::default()
            };
            let log = &args.log;
            let log_threads = profile.metadata.threads.map(u64::from);
            let (mut st, mut heap_why) = heap_choice::choose(
                &session,
                &calls,
                || profilednn_replay::logged::medians_of(log),
                log_threads,
                &st,
                progress,
            );
            // A rewrite, or another thread count (given, or the runtime's default), projects
            // another run of the training: its gradients' copies do not inherit this run's
            // heap accident.
            let rewrites = what_if.as_ref().is_some_and(|w| {
                profilednn_whatif::apply(w, &calls).map_or(true, |t| !t.changes_nothing(&calls))
            });
            let replay_threads = args
                .threads
                .map(|n| n as u64)
                .or_else(|| profilednn_dnnl::threads::get(&session.dnnl));
            let another = match args.run {
                Some(r) => r == RunArg::Another,
                None => heap_choice::is_another_run(rewrites, replay_threads, log_threads),
            };
            if another {
                let (other, note) = heap_choice::for_another_run(&st, &calls);
                st = other;
                if let (Some(why), Some(note)) = (&mut heap_why, note) {
                    *why = format!("{why}; {note}");
                }
            }
            // The what-if's rewritten iteration; `None` replays the iteration as logged. With
            // --torch-trace a rewrite that cannot be made falls back to it: the whole step does
            // not need the primitives rewritten (its framework ops, those that run in oneDNN
            // included, replay through PyTorch).
            let rewritten = match &what_if {
                None => None,
                Some(w) => match profilednn_dnnl::what_if_run::run(
                    &session,
                    &calls,
                    from.clone(),
                    w,
                    &st,
                    progress,
                ) {
                    Ok(run) => Some(run),
                    Err(e) if args.torch_trace.is_some() => {
                        eprintln!(
                            "profilednn: {}: the oneDNN primitives cannot be rewritten ({e}): \
                             they replay as logged; the whole step's framework ops take the \
                             what-if",
                            args.log.display()
                        );
                        None
                    }
                    Err(e) => {
                        return Err(anyhow::Error::new(e).context(format!("{}", args.log.display())))
                    }
                },
            };
            let (r, mut summary) = match rewritten {
                Some(run) => {
                    record = Some(run.record);
                    (run.results, run.sequence)
                }
                None => sequence::replay_sequence(
                    &session,
                    sequence::ResultsFor::Log(&profile),
                    &calls,
                    from,
                    &st,
                    progress,
                ),
            };
            if let Some(why) = heap_why {
                summary.heap_reason = why;
            }
            (r, Some(summary))
        }
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut replay = profilednn_dnnl::what_if_run::replay_record(
        &session,
        args.log.display().to_string(),
        match args.mode {
            Mode::Sequence => "sequence",
            Mode::Isolated => "isolated",
        },
        sequence,
        record,
        results,
    );
    if let Some(trace) = &args.torch_trace {
        if args.layout == LayoutArg::Plain {
            eprintln!(
                "profilednn: --layout plain rewrites the oneDNN primitives only: the framework \
                 ops replay in their recorded layout"
            );
        }
        replay.framework = Some(crate::torch_step::replay(&crate::torch_step::StepArgs {
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
        })?);
    }
    std::fs::write(&args.output, serde_json::to_string_pretty(&replay)? + "\n")
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    let results_file = args.output.display().to_string();
    // Ratios against a polluted log are noise: withheld, as advise withholds its speed-ups.
    let withheld = crate::polluted::of(&profile);
    let all_ms: Vec<f64> = all_problems.iter().map(|p| p.time_ms).collect();
    crate::output::write(
        None,
        profilednn_report::replay_text::render(
            &replay,
            &all_ms,
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
    if profilednn_dnnl::STOP.load(std::sync::atomic::Ordering::Relaxed) {
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
