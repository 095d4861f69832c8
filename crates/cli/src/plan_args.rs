//! The flags of `profilednn plan`.

pub use crate::format::Format;
use clap::Args;
use profilednn_dnnl::sequence::SequenceTiming;
use std::path::PathBuf;

#[derive(Args)]
pub struct PlanArgs {
    /// The oneDNN verbose log of the training run (plain or gzip; a file: it is read twice).
    #[arg(value_name = "LOG")]
    pub(crate) log: PathBuf,
    /// Cores to split into ranks × threads (on each node, with `--nodes`). With `--to`, default:
    /// the target profile's `threads`.
    #[arg(long, value_parser = crate::load::count, required_unless_present = "to")]
    pub(crate) cores: Option<u64>,
    /// Plan for a machine not at hand: each split's rank is the log's step projected onto this
    /// profile (`profilednn peak -o` there, or a spec sheet; docs/machines.md) at the rank's
    /// threads, instead of replayed here.
    #[arg(long, value_name = "TARGET.json", conflicts_with_all = ["dry_run", "python", "dnnl_lib"])]
    pub(crate) to: Option<PathBuf>,
    /// With `--to`: the profile of the machine the log ran on (as for `project --to`).
    #[arg(long, value_name = "SOURCE.json", requires = "to")]
    pub(crate) from: Option<PathBuf>,
    /// Nodes of `--cores` cores each, every one running the split: the global batch is divided
    /// among nodes × ranks, and the all-reduce crosses the network (`--network-gbps`).
    #[arg(long, value_parser = crate::load::count, default_value_t = 1)]
    pub(crate) nodes: u64,
    /// The link between two nodes, Gbit/s each way (e.g. 10 for 10GbE; `bench/gloo_allreduce.py`
    /// over several nodes prints what Gloo gets of it). Required with `--nodes` > 1, unless
    /// `--network-log` measures it.
    #[arg(long, value_name = "GBIT", conflicts_with = "network_log")]
    pub(crate) network_gbps: Option<f64>,
    /// The logs of a multi-node run of the same training, one per node (as `record --ranks`
    /// wrote them on each node, or each node's torchrun output): its time outside oneDNN per
    /// iteration less LOG's framework time is its all-reduce, which prices the network.
    #[arg(long, value_name = "NODE_LOG", num_args = 1..)]
    pub(crate) network_log: Vec<PathBuf>,
    /// Sockets the cores are in (equal shares): splits with a rank across two are invalid.
    /// Default: the `sockets` of `--machine`, else 1.
    #[arg(long, value_parser = crate::load::count)]
    pub(crate) sockets: Option<u64>,
    /// Ranks that ran the logged training, for one rank's log cut out of a multi-rank run (the
    /// global batch is its mini-batch × this). A log with launcher labels (`[default0]:`, …)
    /// or a torchrun `--log-dir` tree gives its ranks itself.
    #[arg(long, value_parser = crate::load::count)]
    pub(crate) log_ranks: Option<u64>,
    /// The all-reduce rate, GB/s per rank (ring bytes / time), e.g. from
    /// `bench/gloo_allreduce.py` on the target node. Default: the `--allreduce-log`
    /// measurement, else 0.6 (Gloo over TCP loopback on a 2-vCPU Xeon), stated in the output.
    #[arg(long, value_name = "GBPS", conflicts_with = "allreduce_log")]
    pub(crate) allreduce_gbps: Option<f64>,
    /// A multi-rank log of the same training (with timestamps): its time outside oneDNN per
    /// iteration less LOG's (a single-rank log) is the all-reduce, which prices it.
    #[arg(long, value_name = "MULTI_RANK_LOG")]
    pub(crate) allreduce_log: Option<PathBuf>,
    /// Machine profile (`profilednn peak`): its `sockets` when `--sockets` is not given.
    #[arg(long, value_name = "PROFILE.json")]
    pub(crate) machine: Option<PathBuf>,
    /// `table` or `json` (`profilednn.plan.v2`, docs/plan-json.md).
    #[arg(long, default_value = "table", value_parser = Format::only(&[Format::Table, Format::Json]))]
    pub(crate) format: Format,
    /// Only the splits, their validity, outside, all-reduce and memory figures: no oneDNN
    /// replay.
    #[arg(long, visible_alias = "no-replay")]
    pub(crate) dry_run: bool,
    /// The PyTorch trace recorded with LOG (`record --torch`, one process): each split's rank
    /// replays the trace's steady iteration through PyTorch at its threads and mini-batch, so
    /// the framework ops count (a transformer's f32 GEMMs and attention run outside oneDNN);
    /// the batch and the gradients are the trace's.
    #[arg(long, value_name = "TRACE")]
    pub(crate) torch_trace: Option<PathBuf>,
    /// The Python that replays the framework ops (default: $PROFILEDNN_TORCH_PYTHON, the running
    /// interpreter, then python3).
    #[arg(long, value_name = "PATH", requires = "torch_trace")]
    pub(crate) python: Option<PathBuf>,
    /// oneDNN library to load (as for `replay`).
    #[arg(long, value_name = "PATH")]
    pub(crate) dnnl_lib: Option<PathBuf>,
    /// Untimed iterations before each split's timed ones.
    #[arg(long, default_value_t = SequenceTiming::default().warmup)]
    pub(crate) warmup: u32,
}
