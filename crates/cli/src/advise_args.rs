//! The flags of `profilednn advise`, the rules' thresholds among them.

pub use crate::format::Format;
use clap::Args;
use profilednn_advice::Thresholds;
use std::path::PathBuf;

#[derive(Args)]
pub struct AdviseArgs {
    /// Verbose logs (several = ranks that ran side by side).
    #[arg(required = true, value_name = "LOG")]
    pub(crate) logs: Vec<PathBuf>,
    /// Output format: `table` (terminal) or `json` (stable rule ids, see docs/).
    #[arg(long, default_value = "table", value_parser = Format::only(&[Format::Table, Format::Json]))]
    pub(crate) format: Format,
    /// Training iterations in the log (otherwise detected), for per-iteration gains.
    #[arg(long, value_parser = crate::load::count)]
    pub(crate) iterations: Option<u64>,
    /// Cores of the machine the log ran on, for the thread-oversubscription rule (default: the
    /// hardware threads of the machine profile, else this machine's when the log's ISA is this
    /// machine's and its threads fit).
    #[arg(long, value_parser = crate::load::count_usize)]
    pub(crate) cores: Option<usize>,
    /// Sockets of that machine, for ranks spanning sockets (rank-thread-placement; default:
    /// the `sockets` of the machine profile). The check counts physical cores per socket:
    /// `--cores`, else the profile's `physical_cores`; without either it is skipped.
    #[arg(long, value_parser = crate::load::count_usize)]
    pub(crate) sockets: Option<usize>,
    /// Machine profile for the roofline rule (default: the one `profilednn peak` saved).
    #[arg(long, value_name = "FILE")]
    pub(crate) machine: Option<PathBuf>,
    /// PyTorch profiler trace of the same run (enables the PyTorch-view rules).
    #[arg(long, value_name = "TRACE.json")]
    pub(crate) torch_trace: Option<PathBuf>,
    /// The same training recorded the other way, eager if this run compiled (compiled if it
    /// ran eager), as its log and trace (`record --torch` writes both): the `compile-vs-eager`
    /// rule says which step is faster and why. Needs --torch-trace.
    #[arg(long, num_args = 2, value_names = ["LOG", "TRACE.json"], requires = "torch_trace")]
    pub(crate) against: Option<Vec<PathBuf>>,
    /// What-if replay results of this log (`profilednn replay LOG --as bf16 … -o R.json`, as
    /// many as wanted): the rules state the projected change on this machine instead of a rule
    /// of thumb, and do not recommend a change projected slower.
    #[arg(long, value_name = "R.json")]
    pub(crate) replay: Vec<PathBuf>,
    /// Run the what-if replays the rules need (bf16 + channels-last, channels-last) through
    /// oneDNN here, in process, and use them as with --replay; with --torch-trace, the whole
    /// step too (its framework ops replayed through PyTorch as recorded and in bf16).
    #[arg(long)]
    pub(crate) project: bool,
    /// oneDNN library for --project (default: $PROFILEDNN_DNNL_LIB, a pip-installed
    /// onednn-cpu-gomp, then the system library path).
    #[arg(long, value_name = "PATH", requires = "project")]
    pub(crate) dnnl_lib: Option<PathBuf>,
    /// Threads for reading the log(s) (default: every core).
    #[arg(long, short = 'j')]
    pub(crate) threads: Option<usize>,
    /// Write the output to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
    /// No progress bar on the terminal (it is shown only on a terminal, for long inputs).
    #[arg(long)]
    pub(crate) no_progress: bool,
    #[command(flatten)]
    pub(crate) thresholds: ThresholdArgs,
}

/// Every rule's threshold (shares are fractions: 0.05 = 5 %).
#[derive(Args)]
#[command(next_help_heading = "Rule thresholds")]
pub struct ThresholdArgs {
    /// reorder-overhead: reorders' share of oneDNN time.
    #[arg(long, default_value_t = Thresholds::default().reorder_share, value_parser = crate::load::share)]
    pub(crate) reorder_share: f64,
    /// reference-implementation: share of time in reference kernels.
    #[arg(long, default_value_t = Thresholds::default().reference_share, value_parser = crate::load::share)]
    pub(crate) reference_share: f64,
    /// f32-on-bf16-hardware: share of time in f32 compute primitives.
    #[arg(long, default_value_t = Thresholds::default().f32_compute_share, value_parser = crate::load::share)]
    pub(crate) f32_compute_share: f64,
    /// bf16-without-bf16-units: share of time in bf16 compute primitives on a CPU without bf16 units.
    #[arg(long, default_value_t = Thresholds::default().bf16_emulated_share, value_parser = crate::load::share)]
    pub(crate) bf16_emulated_share: f64,
    /// unfused-post-ops: share of time in separate passes over producer outputs.
    #[arg(long, default_value_t = Thresholds::default().unfused_share, value_parser = crate::load::share)]
    pub(crate) unfused_share: f64,
    /// backward-weights-dominance: backward-weights / forward time.
    #[arg(long, default_value_t = Thresholds::default().bwd_weights_ratio, value_parser = crate::load::non_negative)]
    pub(crate) bwd_weights_ratio: f64,
    /// tiny-primitives: a call shorter than this (µs) is tiny…
    #[arg(long, default_value_t = Thresholds::default().tiny_us, value_parser = crate::load::non_negative)]
    pub(crate) tiny_us: f64,
    /// …and the rule fires at this share of calls.
    #[arg(long, default_value_t = Thresholds::default().tiny_call_share, value_parser = crate::load::share)]
    pub(crate) tiny_call_share: f64,
    /// time-outside-onednn: fires below this busy share of the timestamps' span.
    #[arg(long, default_value_t = Thresholds::default().busy_share, value_parser = crate::load::share)]
    pub(crate) busy_share: f64,
    /// creation-cache-misses: repeated misses that fire the rule.
    #[arg(long, default_value_t = Thresholds::default().repeated_misses)]
    pub(crate) repeated_misses: u64,
    /// low-roofline-efficiency: share of the roofline below which a primitive is slow…
    #[arg(long, default_value_t = Thresholds::default().roofline_efficiency, value_parser = crate::load::share)]
    pub(crate) roofline_efficiency: f64,
    /// …and the share of time it must lose.
    #[arg(long, default_value_t = Thresholds::default().roofline_lost_share, value_parser = crate::load::share)]
    pub(crate) roofline_lost_share: f64,
    /// loss-as-elementwise-ops: share of the training step (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().loss_share, value_parser = crate::load::share)]
    pub(crate) loss_share: f64,
    /// normalization-as-elementwise-ops: share of the step in separate mul/add passes.
    #[arg(long, default_value_t = Thresholds::default().normalization_share, value_parser = crate::load::share)]
    pub(crate) normalization_share: f64,
    /// optimizer-as-many-ops: ops per iteration inside the optimizer step.
    #[arg(long, default_value_t = Thresholds::default().optimizer_ops, value_parser = crate::load::non_negative)]
    pub(crate) optimizer_ops: f64,
    /// optimizer-as-many-ops: share of the step the optimizer must take.
    #[arg(long, default_value_t = Thresholds::default().optimizer_share, value_parser = crate::load::share)]
    pub(crate) optimizer_share: f64,
    /// data-loading-stall: share of the step spent loading data.
    #[arg(long, default_value_t = Thresholds::default().data_share, value_parser = crate::load::share)]
    pub(crate) data_share: f64,
    /// rank-imbalance: the slowest rank's oneDNN time per iteration over the median rank's.
    #[arg(long, default_value_t = Thresholds::default().rank_imbalance, value_parser = crate::load::non_negative)]
    pub(crate) rank_imbalance: f64,
    /// timings-polluted: share of oneDNN time in primitives whose identical calls ran ten times
    /// their fastest or more; above it the timings are in doubt and projections withhold their
    /// speed-up against the log.
    #[arg(long, default_value_t = Thresholds::default().polluted_share, value_parser = crate::load::share)]
    pub(crate) polluted_share: f64,
    /// gemm-outside-onednn: share of the step in GEMMs run by PyTorch's BLAS (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().framework_gemm_share, value_parser = crate::load::share)]
    pub(crate) framework_gemm_share: f64,
    /// attention-share: share of the step in attention kernels (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().attention_share, value_parser = crate::load::share)]
    pub(crate) attention_share: f64,
    /// elementwise-unfused: share of an eager step in element-wise and normalization ops
    /// (needs --torch-trace).
    #[arg(long, default_value_t = Thresholds::default().elementwise_share, value_parser = crate::load::share)]
    pub(crate) elementwise_share: f64,
}

impl ThresholdArgs {
    pub(crate) fn thresholds(&self) -> Thresholds {
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
