//! `profilednn replay`'s flags, and what they mean to the library: the what-if, the timings.

use clap::Args;
use profilednn_dnnl::run::Timing;
use profilednn_dnnl::sequence::SequenceTiming;
use profilednn_replay::allocation::{Allocation, Heap};
use profilednn_whatif::{Layout, Precision, WhatIf};
use std::path::PathBuf;

#[derive(Args)]
pub struct ReplayArgs {
    /// The oneDNN verbose log to replay (plain or gzip; a file: sequence replay reads it twice).
    #[arg(value_name = "LOG")]
    pub log: PathBuf,
    /// Results file (JSON, `profilednn.replay.v2`), input of `profilednn project --replay`.
    #[arg(long, short = 'o', default_value = "replay.json")]
    pub output: PathBuf,
    /// oneDNN library to load (default: $PROFILEDNN_DNNL_LIB, a pip-installed onednn-cpu-gomp,
    /// then the system library path).
    #[arg(long, value_name = "PATH")]
    pub dnnl_lib: Option<PathBuf>,
    /// OpenMP threads for oneDNN (sets OMP_NUM_THREADS; default: the runtime's own choice).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Bind threads to cores (OMP_PROC_BIND=close, OMP_PLACES=cores).
    #[arg(long)]
    pub bind: bool,
    /// Replay only the N problems with the most time in the log.
    #[arg(long, value_parser = crate::load::count_usize)]
    pub top: Option<usize>,
    /// Untimed runs first: of each problem (isolated) or of the whole iteration (sequence).
    #[arg(long, default_value_t = Timing::default().warmup)]
    pub warmup: u32,
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
    pub no_progress: bool,
    /// `sequence`: one steady-state iteration re-run in log order (each call finds the caches
    /// the previous primitives left, as in training); `isolated`: each problem timed in its
    /// own loop (benchdnn's view).
    #[arg(long, value_enum, default_value_t = Mode::Sequence)]
    pub mode: Mode,
    /// What-if: run convolutions, inner products, matmuls and RNNs in this type, as PyTorch's
    /// CPU autocast does (`bf16`: f32 accumulation, autocast's casts added and priced), instead
    /// of the logged one (sequence mode; see docs/projection.md).
    #[arg(long = "as", value_enum, value_name = "TYPE")]
    pub as_type: Option<AsType>,
    /// What-if: activations in this layout (`channels-last`: acdb/acdeb, `plain`: abcd/abcde),
    /// convolution weights chosen by oneDNN; the layout reorders it makes copies removed.
    #[arg(long, value_enum, default_value_t = LayoutArg::AsLogged)]
    pub layout: LayoutArg,
    /// What-if: the mini-batch of every problem of the iteration set to N.
    #[arg(long, value_name = "N", value_parser = crate::load::count)]
    pub batch: Option<u64>,
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
    pub run: Option<RunArg>,
    /// The whole step: the PyTorch profiler trace recorded with the log (`record --torch`);
    /// the framework ops of its steady iteration are replayed through PyTorch too (`--as
    /// bf16`, `--threads`, `--layout channels-last` and `--batch` apply to them), into the
    /// results' `framework` section.
    #[arg(long, value_name = "TRACE")]
    pub torch_trace: Option<PathBuf>,
    /// The Python (with torch) that replays the framework ops (default:
    /// $PROFILEDNN_TORCH_PYTHON, the running interpreter, then python3).
    #[arg(long, value_name = "PATH", requires = "torch_trace")]
    pub python: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunArg {
    Logged,
    Another,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HeapArg {
    Warm,
    Cold,
    Glibc,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AllocationArg {
    Once,
    PerCall,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AsType {
    Bf16,
    F32,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    AsLogged,
    ChannelsLast,
    Plain,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    Sequence,
    Isolated,
}

impl ReplayArgs {
    /// The what-if the flags ask for; `None` for the iteration as logged.
    pub fn what_if(&self) -> Option<WhatIf> {
        let w = WhatIf {
            precision: self.as_type.map(|a| match a {
                AsType::Bf16 => Precision::Bf16,
                AsType::F32 => Precision::F32,
            }),
            layout: match self.layout {
                LayoutArg::AsLogged => Layout::AsLogged,
                LayoutArg::ChannelsLast => Layout::ChannelsLast,
                LayoutArg::Plain => Layout::Plain,
            },
            batch: self.batch,
        };
        (!w.is_identity()).then_some(w)
    }

    /// The isolated replay's timing.
    pub fn timing(&self) -> Timing {
        Timing {
            warmup: self.warmup,
            min_runs: self.min_runs,
            max_runs: self.max_runs,
            min_time_ms: self.min_time_ms,
        }
    }

    /// The sequence replay's timing, before the heap is chosen.
    pub fn sequence_timing(&self) -> SequenceTiming {
        SequenceTiming {
            warmup: self.warmup,
            allocation: self.allocation.map(|a| match a {
                AllocationArg::Once => Allocation::Once,
                AllocationArg::PerCall => Allocation::PerCall,
            }),
            heap: self.heap.map(|h| match h {
                HeapArg::Warm => Heap::Warm,
                HeapArg::Cold => Heap::Cold,
                HeapArg::Glibc => Heap::Glibc,
            }),
            ..Default::default()
        }
    }

    /// `sequence` or `isolated`, as the results file says.
    /// The mode as the results file records it.
    pub fn replay_mode(&self) -> profilednn_replay::Mode {
        match self.mode {
            Mode::Sequence => profilednn_replay::Mode::Sequence,
            Mode::Isolated => profilednn_replay::Mode::Isolated,
        }
    }
}
