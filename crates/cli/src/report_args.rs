//! The flags of `profilednn report`.

pub use crate::format::Format;
use clap::Args;
use profilednn_report::terminal::RankColumns;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReportArgs {
    /// Verbose logs: plain text, gzip (.gz), or `-` for stdin. Several logs (one per rank, say)
    /// are shown side by side and merged; one with launcher rank labels (a file or stdin) is
    /// split by rank.
    #[arg(required = true, value_name = "LOG")]
    pub(crate) logs: Vec<PathBuf>,
    /// Group by these keys instead of the standard breakdowns: any of engine, prim_kind, impl,
    /// prop_kind, mds, exts, aux, shapes (verbose_converter's names), dtype.
    #[arg(long, value_delimiter = ',', value_name = "KEY[,KEY…]")]
    pub(crate) by: Option<Vec<String>>,
    /// Output format.
    #[arg(long, default_value = "table", value_parser = Format::only(&[Format::Table, Format::Json, Format::Csv]))]
    pub(crate) format: Format,
    /// Rows of the top-primitives table (and of each terminal table).
    #[arg(long, default_value_t = 15, value_parser = crate::load::count_usize)]
    pub(crate) top: usize,
    /// Training iterations in the log, for per-iteration figures (otherwise detected from
    /// marker lines or the repeating call pattern, when possible).
    #[arg(long, value_parser = crate::load::count)]
    pub(crate) iterations: Option<u64>,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    pub(crate) threads: Option<usize>,
    /// Write the report to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
    /// Never show a progress bar.
    #[arg(long)]
    pub(crate) no_progress: bool,
    /// Machine profile for roofline efficiency (from `profilednn peak -o FILE`, or written by
    /// hand). Default: the profile `profilednn peak` saved for this machine, if any.
    #[arg(long, value_name = "FILE")]
    pub(crate) machine: Option<PathBuf>,
    /// Also write a self-contained interactive HTML report (charts, sortable table) to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// PyTorch profiler trace of the same run (`profilednn record --torch`): attributes each
    /// primitive to the framework op around it and shows time outside oneDNN.
    #[arg(long, value_name = "TRACE.json")]
    pub(crate) torch_trace: Option<PathBuf>,
    /// What-if replay results of this log (`profilednn replay LOG --as bf16 … -o R.json`): the
    /// advice states the projected change on this machine (see `profilednn advise --replay`).
    #[arg(long, value_name = "R.json", conflicts_with = "no_advice")]
    pub(crate) replay: Vec<PathBuf>,
    /// Run the what-if replays the advice rules need through oneDNN here, in process, and use
    /// them as with --replay (as `profilednn advise --project`).
    #[arg(long, conflicts_with = "no_advice")]
    pub(crate) project: bool,
    /// oneDNN library for --project (default: $PROFILEDNN_DNNL_LIB, a pip-installed
    /// onednn-cpu-gomp, then the system library path).
    #[arg(long, value_name = "PATH", requires = "project")]
    pub(crate) dnnl_lib: Option<PathBuf>,
    /// Leave out the advice section (`profilednn advise` shows it in full).
    #[arg(long)]
    pub(crate) no_advice: bool,
    /// Ranks (logs side by side) that get columns of their own in the terminal report: `all`,
    /// or a list like `0,17`. Default: every rank up to 8 ranks; beyond, their distribution,
    /// the slowest ranks and the ranks that stopped early (JSON keeps every rank).
    #[arg(long, value_name = "all|RANK[,RANK…]", value_parser = RankColumns::parse)]
    pub(crate) ranks: Option<RankColumns>,
    /// No efficiency section even when a machine profile exists.
    #[arg(long, conflicts_with = "machine")]
    pub(crate) no_roofline: bool,
    /// Write the terminal report to stderr (`record`'s end-of-run report: stdout carries the
    /// program's own output).
    #[arg(skip)]
    pub(crate) to_stderr: bool,
}

impl ReportArgs {
    /// The report `record` prints when the program ends: the same sections as `report LOG`
    /// (roofline with the saved machine profile, the advice), 10 rows a table, with the PyTorch
    /// view when the trace was written.
    pub(crate) fn end_of_record(log: PathBuf, trace: Option<PathBuf>) -> ReportArgs {
        ReportArgs {
            logs: vec![log],
            by: None,
            format: Format::Table,
            top: 10,
            iterations: None,
            threads: None,
            output: None,
            no_progress: true,
            machine: None,
            html: None,
            torch_trace: trace,
            replay: vec![],
            project: false,
            dnnl_lib: None,
            no_advice: false,
            ranks: None,
            no_roofline: false,
            to_stderr: true,
        }
    }
}
