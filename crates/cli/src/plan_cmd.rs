//! `profilednn plan LOG --cores N [--sockets S]`: the splits of N cores into ranks × threads at
//! the log's global batch, each projected (one rank's iteration replayed at its threads and
//! mini-batch, plus the gradient all-reduce), with the invalid ones and why.

use crate::output::outln;
use crate::ExitCode;
use anyhow::{bail, Context, Result};
use clap::Args;
use profilednn_machine::MachineProfile;
use profilednn_replay::native::sequence::{steady_iteration, SequenceTiming};
use profilednn_replay::native::Session;
use profilednn_replay::plan::{self, Plan, Target};
use std::path::PathBuf;

#[derive(Args)]
pub struct PlanArgs {
    /// The oneDNN verbose log of the training run (plain or gzip; a file: it is read twice).
    #[arg(value_name = "LOG")]
    log: PathBuf,
    /// Cores to split into ranks × threads.
    #[arg(long, value_parser = crate::load::count)]
    cores: u64,
    /// Sockets the cores are in (equal shares): splits with a rank across two are invalid.
    #[arg(long, default_value_t = 1, value_parser = crate::load::count)]
    sockets: u64,
    /// Ranks that ran the logged training, for one rank's log cut out of a multi-rank run (the
    /// global batch is its mini-batch × this). A log with launcher labels (`[default0]:`, …)
    /// or a torchrun `--log-dir` tree gives its ranks itself.
    #[arg(long, value_parser = crate::load::count)]
    log_ranks: Option<u64>,
    /// Machine profile (`profilednn peak`): its memory bandwidth prices the all-reduce
    /// (default: an assumed 10 GB/s, stated in the output).
    #[arg(long, value_name = "PROFILE.json")]
    machine: Option<PathBuf>,
    /// `table` or `json` (`profilednn.plan.v1`, docs/projection.md).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only the splits, their validity, all-reduce and memory figures: no oneDNN replay.
    #[arg(long, visible_alias = "no-replay")]
    dry_run: bool,
    /// oneDNN library to load (as for `replay`).
    #[arg(long, value_name = "PATH")]
    dnnl_lib: Option<PathBuf>,
    /// Untimed iterations before each split's timed ones.
    #[arg(long, default_value_t = SequenceTiming::default().warmup)]
    warmup: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Table,
    Json,
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    if args.log.as_os_str() == "-" {
        bail!("plan reads the log twice, so it needs a file, not stdin: save the log to a file");
    }
    if !args.cores.is_multiple_of(args.sockets) {
        bail!(
            "--cores {} is not divisible by --sockets {}: give the cores of whole sockets",
            args.cores,
            args.sockets
        );
    }
    let target = match &args.machine {
        Some(p) => {
            let m = MachineProfile::load(p)?;
            Target {
                cores: args.cores,
                sockets: args.sockets,
                memory_gbps: m.memory_gbps,
                bandwidth_source: format!("memory_gbps of machine profile {}", p.display()),
            }
        }
        None => Target {
            cores: args.cores,
            sockets: args.sockets,
            memory_gbps: plan::allreduce::DEFAULT_GBPS,
            bandwidth_source: "assumed default; `profilednn peak` measures it, --machine uses it"
                .into(),
        },
    };
    let Logged {
        calls,
        from,
        rank_batches,
    } = logged(&args)?;
    let footprint = plan::footprint::of_iteration(&calls)
        .with_context(|| format!("{}: steady-state iteration ({from})", args.log.display()))?;
    let mut plan = plan::skeleton(
        &args.log.display().to_string(),
        &target,
        &rank_batches,
        footprint,
    )
    .map_err(anyhow::Error::msg)?;
    plan.assumptions
        .insert(0, format!("the iteration: {from}, {} calls", calls.len()));
    if !args.dry_run {
        replay_rows(&args, &mut plan, &calls, &from)?;
    }
    match args.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&plan)?),
        Format::Table => print_table(&plan)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The logged iteration the plan replays, and every logged rank's mini-batch.
struct Logged {
    calls: plan::Calls,
    from: String,
    rank_batches: Vec<u64>,
}

/// A single-process log: its steady-state iteration, its mini-batch `--log-ranks` times. A
/// multi-rank log: the first rank's iteration (every rank runs the same model) and each rank's
/// own mini-batch (a straggler's larger batch counts in the global batch).
fn logged(args: &PlanArgs) -> Result<Logged> {
    let Some(split) = crate::rank_logs::split(&args.log)? else {
        let profile = crate::load::profile(&args.log, None, None, true)?;
        let input = profilednn_verbose::LogInput::open(&args.log)
            .with_context(|| format!("{}: cannot read the log", args.log.display()))?;
        let (calls, from) = steady_iteration(input, &profile);
        let mb = batch_of(&calls, &from, &args.log.display().to_string())?;
        let k = usize::try_from(args.log_ranks.unwrap_or(1))?;
        return Ok(Logged {
            calls,
            from,
            rank_batches: vec![mb; k],
        });
    };
    let n = split.ranks.len() as u64;
    if args.log_ranks.is_some_and(|k| k != n) {
        bail!(
            "{}: the log holds {n} ranks (labelled by {}); drop --log-ranks",
            split.source,
            split.launcher
        );
    }
    let loaded = crate::load::logs_and_ranks(std::slice::from_ref(&args.log), None, None, true)?;
    let mut first = None;
    let mut rank_batches = Vec::new();
    // The loader keeps the ranks' profiles in the split's order.
    for (r, profile) in split.ranks.iter().zip(&loaded.profiles) {
        let input = profilednn_verbose::LogInput::Stream {
            path: args.log.clone(),
            reader: Box::new(std::io::Cursor::new(r.bytes.clone())),
            compressed_len: None,
        };
        let (calls, from) = steady_iteration(input, profile);
        let name = format!("{} [rank {}]", split.source, r.rank);
        rank_batches.push(batch_of(&calls, &from, &name)?);
        if first.is_none() {
            first = Some((calls, format!("rank {}: {from}", r.rank)));
        }
    }
    let Some((calls, from)) = first else {
        bail!("{}: a multi-rank log without a rank's lines", split.source);
    };
    Ok(Logged {
        calls,
        from,
        rank_batches,
    })
}

fn batch_of(calls: &plan::Iteration, from: &str, source: &str) -> Result<u64> {
    plan::logged_batch(calls).ok_or_else(|| {
        anyhow::anyhow!(
            "{source}: no convolution, inner product or matmul with an `mb` in the steady-state iteration ({from}): the mini-batch, and so the global batch, is unknown"
        )
    })
}

/// Replays one rank of every valid split, fewest threads last (the order does not matter to
/// oneDNN: primitives are created afresh at each thread count).
fn replay_rows(
    args: &PlanArgs,
    plan: &mut Plan,
    calls: &plan::Iteration,
    from: &str,
) -> Result<()> {
    let session = Session::open(args.dnnl_lib.as_deref()).map_err(|e| {
        anyhow::anyhow!("{e} (`--dry-run` plans without oneDNN: splits, all-reduce and memory)")
    })?;
    let timing = SequenceTiming {
        warmup: args.warmup,
        ..Default::default()
    };
    let todo: Vec<(String, u64, u64)> = plan
        .rows
        .iter()
        .filter(|r| r.invalid.is_empty())
        .filter_map(|r| Some((r.split.clone(), r.threads, r.per_rank_batch?)))
        .collect();
    for (split, threads, batch) in todo {
        eprintln!("profilednn: replaying split {split}: {threads} thread(s), mini-batch {batch}");
        match plan::measure::rank(&session, calls, from, threads, batch, &timing, |_, _, _| {
            true
        }) {
            Ok(r) => {
                plan.set_compute(&split, r.onednn_ms);
                if r.not_replayed > 0 {
                    note(
                        plan,
                        &split,
                        format!(
                            "{} of {} problems not replayed (not in compute)",
                            r.not_replayed, r.problems
                        ),
                    );
                }
            }
            Err(e) => note(plan, &split, format!("not replayed: {e}")),
        }
    }
    Ok(())
}

fn note(plan: &mut Plan, split: &str, what: String) {
    if let Some(r) = plan.rows.iter_mut().find(|r| r.split == split) {
        r.notes.push(what);
    }
}

fn mib(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| format!("{:.1}", b as f64 / 1048576.0))
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

fn print_table(p: &Plan) -> Result<()> {
    let batches: Vec<String> = p.logged_rank_batches.iter().map(u64::to_string).collect();
    outln!(
        "Plan for {}: {} cores in {} socket(s), global batch {} (the mini-batch of {} logged rank(s): {})",
        p.source,
        p.cores,
        p.sockets,
        p.global_batch,
        p.logged_ranks,
        batches.join(" + ")
    );
    outln!(
        "  gradients all-reduced per iteration: {:.2} MiB ({} backward-weights calls); all-reduce priced at {} GB/s ({})",
        p.footprint.gradient_bytes as f64 / 1048576.0,
        p.footprint.backward_weights_calls,
        p.memory_gbps,
        p.bandwidth_source
    );
    if !p.replayed {
        outln!("  compute not replayed (--dry-run, or no split could be replayed)");
    }
    outln!(
        "\n{:<8} {:>5} {:>7} {:>9} {:>11} {:>12} {:>10} {:>10} {:>8}  {}",
        "split",
        "ranks",
        "threads",
        "rank mb",
        "compute ms",
        "allreduce ms",
        "total ms",
        "mem MiB",
        "rel thr",
        "notes"
    );
    for r in &p.rows {
        let mut notes = r
            .invalid
            .iter()
            .map(|w| format!("INVALID: {w}"))
            .collect::<Vec<_>>();
        notes.extend(r.notes.iter().cloned());
        outln!(
            "{:<8} {:>5} {:>7} {:>9} {:>11} {:>12} {:>10} {:>10} {:>8}  {}",
            r.split,
            r.ranks,
            r.threads,
            r.per_rank_batch.map_or("-".into(), |b| b.to_string()),
            ms(r.compute_ms),
            ms(r.allreduce_ms),
            ms(r.total_ms),
            mib(r.memory_bytes_per_rank),
            r.relative_throughput
                .map_or("-".into(), |x| format!("{x:.2}")),
            notes.join("; ")
        );
    }
    outln!("\nAssumed:");
    for a in &p.assumptions {
        outln!("  - {a}");
    }
    Ok(())
}
