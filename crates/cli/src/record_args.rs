//! The flags of `profilednn record`.

use clap::Args;
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Args)]
pub struct RecordArgs {
    /// The log to write (`.gz` compresses). Default: `profilednn-<unix time>.log`.
    #[arg(long, short = 'o', value_name = "LOG")]
    pub(crate) output: Option<PathBuf>,
    /// Verbose level: 1 = executions, 2 = also primitive creations (cache hits and misses).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub(crate) level: u8,
    /// Do not ask oneDNN for timestamps.
    #[arg(long)]
    pub(crate) no_timestamps: bool,
    /// Do not print the summary report when the command ends.
    #[arg(long)]
    pub(crate) no_report: bool,
    /// Also capture PyTorch's profiler trace: `profilednn.profile()` in the script writes it
    /// next to the log (LOG stem + `.trace.json.gz`); then `report LOG --torch-trace TRACE`.
    #[arg(long)]
    pub(crate) torch: bool,
    /// Multi-process runs: add the launcher's own flag that labels each line with its rank
    /// (`torchrun --tee 3`, Open MPI `mpirun --tag-output`, MPICH `-prepend-rank`, `srun
    /// --label`), so that `report` profiles each rank. On one node of several (torchrun
    /// `--node-rank`), or run as one rank by srun/mpirun/torchrun `--no-python`, the log starts
    /// with the node's line (`profilednn,node,NAME,rank,R,host,HOST`), by which `report` reads
    /// the nodes' logs together.
    #[arg(long)]
    pub(crate) ranks: bool,
    /// The training command and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<OsString>,
}
