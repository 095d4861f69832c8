//! `profilednn advise`: rules that turn a profile into actions.

mod this_machine;
pub(crate) use this_machine::LogMachine;

use crate::ExitCode;
use anyhow::Result;
use clap::{Args, ValueEnum};
use profilednn_advice::{advise, Evidence, Thresholds};
use profilednn_analysis::{summarize_merged, Profile, SummaryOptions};

use std::path::PathBuf;

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Args)]
pub struct AdviseArgs {
    /// Verbose logs (several = ranks that ran side by side).
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// Output format: `table` (terminal) or `json` (stable rule ids, see docs/).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Training iterations in the log (otherwise detected), for per-iteration gains.
    #[arg(long, value_parser = crate::load::count)]
    iterations: Option<u64>,
    /// Cores of the machine the log ran on, for the thread-oversubscription rule (default: the
    /// hardware threads of the machine profile, else this machine's when the log's ISA is this
    /// machine's and its threads fit).
    #[arg(long, value_parser = crate::load::count_usize)]
    cores: Option<usize>,
    /// Sockets of that machine, for ranks spanning sockets (rank-thread-placement; default:
    /// the `sockets` of the machine profile). The check counts physical cores per socket:
    /// `--cores`, else the profile's `physical_cores`; without either it is skipped.
    #[arg(long, value_parser = crate::load::count_usize)]
    sockets: Option<usize>,
    /// Machine profile for the roofline rule (default: the one `profilednn peak` saved).
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// PyTorch profiler trace of the same run (enables the PyTorch-view rules).
    #[arg(long, value_name = "TRACE.json")]
    torch_trace: Option<PathBuf>,
    /// What-if replay results of this log (`profilednn replay LOG --as bf16 … -o R.json`, as
    /// many as wanted): the rules state the projected change on this machine instead of a rule
    /// of thumb, and do not recommend a change projected slower.
    #[arg(long, value_name = "R.json")]
    replay: Vec<PathBuf>,
    /// Run the what-if replays the rules need (bf16 + channels-last, channels-last) through
    /// oneDNN here, in process, and use them as with --replay; with --torch-trace, the whole
    /// step too (its framework ops replayed through PyTorch as recorded and in bf16).
    #[arg(long)]
    project: bool,
    /// oneDNN library for --project (default: $PROFILEDNN_DNNL_LIB, a pip-installed
    /// onednn-cpu-gomp, then the system library path).
    #[arg(long, value_name = "PATH", requires = "project")]
    dnnl_lib: Option<PathBuf>,
    /// Threads for reading the log(s) (default: every core).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// Write the output to this file instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// No progress bar on the terminal (it is shown only on a terminal, for long inputs).
    #[arg(long)]
    no_progress: bool,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// Every rule's threshold (shares are fractions: 0.05 = 5 %).
#[derive(Args)]
#[command(next_help_heading = "Rule thresholds")]
pub struct ThresholdArgs {
    /// reorder-overhead: reorders' share of oneDNN time.
    #[arg(long, default_value_t = Thresholds::default().reorder_share, value_parser = crate::load::share)]
    reorder_share: f64,
    /// reference-implementation: share of time in reference kernels.
    #[arg(long, default_value_t = Thresholds::default().reference_share, value_parser = crate::load::share)]
    reference_share: f64,
    /// f32-on-bf16-hardware: share of time in f32 compute primitives.
    #[arg(long, default_value_t = Thresholds::default().f32_compute_share, value_parser = crate::load::share)]
    f32_compute_share: f64,
    /// bf16-without-bf16-units: share of time in bf16 compute primitives on a CPU without bf16 units.
    #[arg(long, default_value_t = Thresholds::default().bf16_emulated_share, value_parser = crate::load::share)]
    bf16_emulated_share: f64,
    /// unfused-post-ops: share of time in separate passes over producer outputs.
    #[arg(long, default_value_t = Thresholds::default().unfused_share, value_parser = crate::load::share)]
    unfused_share: f64,
    /// backward-weights-dominance: backward-weights / forward time.
    #[arg(long, default_value_t = Thresholds::default().bwd_weights_ratio, value_parser = crate::load::non_negative)]
    bwd_weights_ratio: f64,
    /// tiny-primitives: a call shorter than this (µs) is tiny…
    #[arg(long, default_value_t = Thresholds::default().tiny_us, value_parser = crate::load::non_negative)]
    tiny_us: f64,
    /// …and the rule fires at this share of calls.
    #[arg(long, default_value_t = Thresholds::default().tiny_call_share, value_parser = crate::load::share)]
    tiny_call_share: f64,
    /// time-outside-onednn: fires below this busy share of the timestamps' span.
    #[arg(long, default_value_t = Thresholds::default().busy_share, value_parser = crate::load::share)]
    busy_share: f64,
    /// creation-cache-misses: repeated misses that fire the rule.
    #[arg(long, default_value_t = Thresholds::default().repeated_misses)]
    repeated_misses: u64,
    /// low-roofline-efficiency: share of the roofline below which a primitive is slow…
    #[arg(long, default_value_t = Thresholds::default().roofline_efficiency, value_parser = crate::load::share)]
    roofline_efficiency: f64,
    /// …and the share of time it must lose.
    #[arg(long, default_value_t = Thresholds::default().roofline_lost_share, value_parser = crate::load::share)]
    roofline_lost_share: f64,
    /// loss-as-elementwise-ops: share of the training step (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().loss_share, value_parser = crate::load::share)]
    loss_share: f64,
    /// normalization-as-elementwise-ops: share of the step in separate mul/add passes.
    #[arg(long, default_value_t = Thresholds::default().normalization_share, value_parser = crate::load::share)]
    normalization_share: f64,
    /// optimizer-as-many-ops: ops per iteration inside the optimizer step.
    #[arg(long, default_value_t = Thresholds::default().optimizer_ops, value_parser = crate::load::non_negative)]
    optimizer_ops: f64,
    /// optimizer-as-many-ops: share of the step the optimizer must take.
    #[arg(long, default_value_t = Thresholds::default().optimizer_share, value_parser = crate::load::share)]
    optimizer_share: f64,
    /// data-loading-stall: share of the step spent loading data.
    #[arg(long, default_value_t = Thresholds::default().data_share, value_parser = crate::load::share)]
    data_share: f64,
    /// rank-imbalance: the slowest rank's oneDNN time per iteration over the median rank's.
    #[arg(long, default_value_t = Thresholds::default().rank_imbalance, value_parser = crate::load::non_negative)]
    rank_imbalance: f64,
    /// timings-polluted: share of oneDNN time in primitives whose identical calls ran ten times
    /// their fastest or more; above it the timings are in doubt and projections withhold their
    /// speed-up against the log.
    #[arg(long, default_value_t = Thresholds::default().polluted_share, value_parser = crate::load::share)]
    polluted_share: f64,
    /// gemm-outside-onednn: share of the step in GEMMs run by PyTorch's BLAS (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().framework_gemm_share, value_parser = crate::load::share)]
    framework_gemm_share: f64,
    /// attention-share: share of the step in attention kernels (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().attention_share, value_parser = crate::load::share)]
    attention_share: f64,
    /// elementwise-unfused: share of an eager step in element-wise and normalization ops
    /// (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().elementwise_share, value_parser = crate::load::share)]
    elementwise_share: f64,
}

impl ThresholdArgs {
    fn thresholds(&self) -> Thresholds {
        Thresholds {
            reorder_share: self.reorder_share,
            reference_share: self.reference_share,
            f32_compute_share: self.f32_compute_share,
            bf16_emulated_share: self.bf16_emulated_share,
            unfused_share: self.unfused_share,
            bwd_weights_ratio: self.bwd_weights_ratio,
            tiny_us: self.tiny_us,
            tiny_call_share: self.tiny_call_share,
            busy_share: self.busy_share,
            repeated_misses: self.repeated_misses,
            roofline_efficiency: self.roofline_efficiency,
            roofline_lost_share: self.roofline_lost_share,
            loss_share: self.loss_share,
            normalization_share: self.normalization_share,
            optimizer_ops: self.optimizer_ops,
            optimizer_share: self.optimizer_share,
            data_share: self.data_share,
            rank_imbalance: self.rank_imbalance,
            polluted_share: self.polluted_share,
            framework_gemm_share: self.framework_gemm_share,
            attention_share: self.attention_share,
            elementwise_share: self.elementwise_share,
        }
    }
}

/// The what-if projections the advice rules take, for `advise` and `report` alike: those of the
/// replay files (`--replay`), and with `project` (`--project`, its `--dnnl-lib`) the what-ifs
/// the rules want on `evidence`, replayed here through oneDNN.
pub(crate) fn projections(
    logs: &[PathBuf],
    profiles: &[Profile],
    evidence: &Evidence,
    thresholds: &Thresholds,
    replay_files: &[PathBuf],
    project: Option<Option<&std::path::Path>>,
    no_progress: bool,
) -> Result<Vec<profilednn_advice::Projected>> {
    let mut projections = crate::advice_projections::from_files(logs, profiles, replay_files)?;
    if let Some(dnnl_lib) = project {
        let wanted = profilednn_advice::wanted_what_ifs(evidence, thresholds);
        projections.extend(crate::whatif_run::project(
            logs,
            profiles,
            &wanted,
            dnnl_lib,
            no_progress,
        )?);
    }
    Ok(projections)
}

pub fn run(args: AdviseArgs) -> Result<ExitCode> {
    // With a PyTorch trace, a log without a oneDNN line still has a step to advise on.
    let loaded = crate::load::logs_and_ranks_with(
        &args.logs,
        args.threads,
        args.iterations,
        args.no_progress,
        args.torch_trace.is_some(),
    )?;
    let nodes = profilednn_analysis::load::nodes_of(&loaded.ranks);
    let profiles = loaded.profiles;
    let machine = crate::machine_file::load(args.machine.as_deref())?;
    let roofs = machine.clone();
    let merged = Profile::merged(&profiles);
    // --cores first; else the machine profile's (given or saved); else this machine's, when
    // the log looks recorded here.
    let log_machine = LogMachine::new(args.cores, args.sockets, machine.as_ref(), &merged.metadata);
    let summary = summarize_merged(
        &profiles,
        &merged,
        &SummaryOptions {
            machine,
            ..Default::default()
        },
    );
    let mut torch = crate::load::torch_join_of_logs(args.torch_trace.as_deref(), &args.logs)?;
    if let Some(j) = torch.as_mut() {
        // The framework ops' rules rank time lost against the same roofs as the report's.
        j.set_roofs(summary.efficiency.as_ref(), roofs.as_ref());
    }
    let thresholds = args.thresholds.thresholds();
    let evidence = log_machine.evidence(&profiles, &merged, &summary, torch.as_ref(), &nodes);
    let projections = projections(
        &args.logs,
        &profiles,
        &evidence,
        &thresholds,
        &args.replay,
        args.project.then_some(args.dnnl_lib.as_deref()),
        args.no_progress,
    )?;
    // With the trace, --project judges the changes on the whole step too (framework ops
    // replayed through PyTorch), which is what a transformer's advice needs.
    let steps = match (&args.torch_trace, args.project) {
        (Some(t), true) => crate::torch_step::what_ifs(t, merged.metadata.threads.map(u64::from))?,
        _ => Vec::new(),
    };
    let advice = advise(
        &evidence
            .with_projections(&projections)
            .with_step_what_ifs(&steps),
        &thresholds,
    );
    let text = match args.format {
        Format::Table => profilednn_report::advice::render(&advice, false),
        Format::Json => serde_json::to_string_pretty(&advice)? + "\n",
    };
    crate::output::write(args.output.as_deref(), text)?;
    Ok(crate::output::read_errors_status(
        &summary.read_errors,
        "advice",
    ))
}
