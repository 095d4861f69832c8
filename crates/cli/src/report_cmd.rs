//! `profilednn report`.

use crate::ExitCode;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use profilednn_advice::{advise, Thresholds};
use profilednn_analysis::{summarize_merged, GroupKey, Profile, SummaryOptions};
use profilednn_report::terminal::{RankColumns, TerminalOptions};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Copy, Clone, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Verbose logs: plain text, gzip (.gz), or `-` for stdin. Several logs (one per rank, say)
    /// are shown side by side and merged; one with launcher rank labels (a file or stdin) is
    /// split by rank.
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
    /// Group by these keys instead of the standard breakdowns: any of engine, prim_kind, impl,
    /// prop_kind, mds, exts, aux, shapes (verbose_converter's names), dtype.
    #[arg(long, value_delimiter = ',', value_name = "KEY[,KEY…]")]
    by: Option<Vec<String>>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Rows of the top-primitives table (and of each terminal table).
    #[arg(long, default_value_t = 15, value_parser = crate::load::count_usize)]
    top: usize,
    /// Training iterations in the log, for per-iteration figures (otherwise detected from
    /// marker lines or the repeating call pattern, when possible).
    #[arg(long, value_parser = crate::load::count)]
    iterations: Option<u64>,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// Write the report to this file instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Never show a progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Machine profile for roofline efficiency (from `profilednn peak -o FILE`, or written by
    /// hand). Default: the profile `profilednn peak` saved for this machine, if any.
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// Also write a self-contained interactive HTML report (charts, sortable table) to this file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// PyTorch profiler trace of the same run (`profilednn record --torch`): attributes each
    /// primitive to the framework op around it and shows time outside oneDNN.
    #[arg(long, value_name = "TRACE.json")]
    torch_trace: Option<PathBuf>,
    /// What-if replay results of this log (`profilednn replay LOG --as bf16 … -o R.json`): the
    /// advice states the projected change on this machine (see `profilednn advise --replay`).
    #[arg(long, value_name = "R.json", conflicts_with = "no_advice")]
    replay: Vec<PathBuf>,
    /// Run the what-if replays the advice rules need through oneDNN here, in process, and use
    /// them as with --replay (as `profilednn advise --project`).
    #[arg(long, conflicts_with = "no_advice")]
    project: bool,
    /// oneDNN library for --project (default: $PROFILEDNN_DNNL_LIB, a pip-installed
    /// onednn-cpu-gomp, then the system library path).
    #[arg(long, value_name = "PATH", requires = "project")]
    dnnl_lib: Option<PathBuf>,
    /// Leave out the advice section (`profilednn advise` shows it in full).
    #[arg(long)]
    no_advice: bool,
    /// Ranks (logs side by side) that get columns of their own in the terminal report: `all`,
    /// or a list like `0,17`. Default: every rank up to 8 ranks; beyond, their distribution,
    /// the slowest ranks and the ranks that stopped early (JSON keeps every rank).
    #[arg(long, value_name = "all|RANK[,RANK…]", value_parser = RankColumns::parse)]
    ranks: Option<RankColumns>,
    /// No efficiency section even when a machine profile exists.
    #[arg(long, conflicts_with = "machine")]
    no_roofline: bool,
    /// Write the terminal report to stderr (`record`'s end-of-run report: stdout carries the
    /// program's own output).
    #[arg(skip)]
    to_stderr: bool,
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

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let by = match &args.by {
        Some(keys) => Some(
            keys.iter()
                .map(|k| k.trim().parse::<GroupKey>())
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None if args.format == Format::Csv => Some(GroupKey::CONVERTER_DEFAULT.to_vec()),
        None => None,
    };
    // With a PyTorch trace, a log without a oneDNN line still has a step to report.
    let loaded = crate::load::logs_and_ranks_with(
        &args.logs,
        args.threads,
        args.iterations,
        args.no_progress,
        args.torch_trace.is_some(),
    )?;
    let (profiles, ranks) = (loaded.profiles, loaded.ranks);
    let nodes = profilednn_analysis::load::nodes_of(&ranks);
    // Loaded once: the summary's efficiency section and the HTML page's roofline use it.
    let machine = if args.no_roofline {
        None
    } else {
        crate::machine_file::load(args.machine.as_deref())?
    };
    // Merged once: the summary, the advice and the HTML page are all of this view.
    let merged = Profile::merged(&profiles);
    // The machine profile's cores and sockets, as `advise` without `--cores/--sockets`.
    let log_machine =
        crate::advise_cmd::LogMachine::new(None, None, machine.as_ref(), &merged.metadata);
    let summary = summarize_merged(
        &profiles,
        &merged,
        &SummaryOptions {
            by,
            top: args.top,
            machine: machine.clone(),
        },
    );
    let mut torch = crate::load::torch_join_of_logs(args.torch_trace.as_deref(), &args.logs)?;
    if let Some(j) = torch.as_mut() {
        j.set_roofs(summary.efficiency.as_ref(), machine.as_ref());
    }
    let evidence = || log_machine.evidence(&profiles, &merged, &summary, torch.as_ref(), &nodes);
    let thresholds = Thresholds::default();
    let projections = crate::advise_cmd::projections(
        &args.logs,
        &profiles,
        &evidence(),
        &thresholds,
        &args.replay,
        args.project.then_some(args.dnnl_lib.as_deref()),
        args.no_progress,
    )?;
    // Computed at most once, for the HTML page and the terminal or JSON output alike.
    let advice_once = std::cell::OnceCell::new();
    let advice = || {
        advice_once.get_or_init(|| advise(&evidence().with_projections(&projections), &thresholds))
    };
    if let Some(html) = &args.html {
        let advice = (!args.no_advice).then(advice);
        write_html(
            html,
            &args.logs,
            &HtmlParts {
                profile: &merged,
                summary: &summary,
                machine: machine.as_ref(),
                advice,
                torch: torch.as_ref(),
                ranks: &ranks,
            },
        )?;
    }
    let text = match args.format {
        Format::Table => {
            let advice = (!args.no_advice).then(advice);
            table_text(&args, &summary, &ranks, torch.as_ref(), advice)
        }
        Format::Json => {
            let mut v = profilednn_report::json::to_value(&summary);
            if !ranks.is_empty() {
                let (list, logs) = profilednn_report::json::ranks(&ranks);
                v["ranks"] = list;
                v["rank_logs"] = logs;
            }
            if let Some(j) = &torch {
                v["torch"] = serde_json::to_value(j)?;
            }
            if !args.no_advice {
                v["advice"] = serde_json::to_value(advice())?;
            }
            serde_json::to_string_pretty(&v)? + "\n"
        }
        Format::Csv => profilednn_report::csv_out::render(&summary)?,
    };
    if args.to_stderr {
        eprint!("{text}");
    } else {
        crate::output::write(args.output.as_deref(), text).context("cannot write the report")?;
    }
    // A log that could not be read to its end is a partial result: say so in the exit code.
    Ok(crate::output::read_errors_status(
        &summary.read_errors,
        "the report",
    ))
}

/// The terminal report: the tables, the ranks, the PyTorch view and the advice's short form.
/// Full width on a terminal, 160 columns into a file or a pipe; a multi-rank report's lines
/// are kept to the terminal's width (120 columns into a file or a pipe), whatever the number
/// of ranks (but with `--ranks all`).
fn table_text(
    args: &ReportArgs,
    summary: &profilednn_analysis::Summary,
    ranks: &[profilednn_analysis::ranks::RankSet],
    torch: Option<&profilednn_analysis::torch_trace::TorchJoin>,
    advice: Option<&profilednn_advice::Advice>,
) -> String {
    let tty = std::io::stdout().is_terminal() && args.output.is_none();
    // `--ranks all` asks for a column per rank: tables as wide as they come.
    let fold = !ranks.is_empty() && args.ranks != Some(RankColumns::All);
    let width = match (tty, fold) {
        (true, _) => None,
        (false, true) => Some(120),
        (false, false) => Some(160),
    };
    let options = TerminalOptions {
        rows: args.top,
        width,
        columns: args.ranks.clone().unwrap_or_default(),
    };
    // What a terminal shows, for the sentences folded to it.
    let columns = usize::from(
        width
            .or_else(profilednn_report::terminal::terminal_width)
            .unwrap_or(120),
    );
    let fit = |t: String| {
        if fold {
            profilednn_report::terminal::fit(&t, columns)
        } else {
            t
        }
    };
    let mut text = fit(profilednn_report::terminal::render(summary, &options));
    text += &profilednn_report::ranks::render(ranks, &options.columns, columns);
    if let Some(j) = torch {
        text += &profilednn_report::torch_view::render(j, args.top);
    }
    if let Some(a) = advice {
        text += &fit(profilednn_report::advice::render(a, true));
    }
    text
}

/// What the HTML page shows, computed once by [`run`].
struct HtmlParts<'a> {
    profile: &'a Profile,
    summary: &'a profilednn_analysis::Summary,
    machine: Option<&'a profilednn_machine::MachineProfile>,
    advice: Option<&'a profilednn_advice::Advice>,
    torch: Option<&'a profilednn_analysis::torch_trace::TorchJoin>,
    ranks: &'a [profilednn_analysis::ranks::RankSet],
}

/// The timeline of the first rank of a multi-rank log (`log`: labelled lines, or a torchrun
/// `--log-dir` tree), over its own timestamps: the ranks' lines interleaved in one chart would
/// add up to more than 100 % busy, and a chart per rank is not read at 64 ranks. `None` when the
/// rank has no timestamps.
fn rank_timeline(
    log: &std::path::Path,
    set: &profilednn_analysis::ranks::RankSet,
) -> Result<Option<profilednn_analysis::timeline::TimeBins>> {
    use profilednn_analysis::rank_logs::{split_or_open, Source};
    use profilednn_analysis::timeline::{rank_time_bins, time_bins};
    let Some(first) = set.ranks.iter().min_by_key(|r| r.rank) else {
        return Ok(None);
    };
    let (Some(a), Some(b)) = (first.first_timestamp_ms, first.last_timestamp_ms) else {
        return Ok(None);
    };
    let of = format!("rank {} of {} ranks", first.rank, set.ranks.len());
    Ok(match split_or_open(log)? {
        Source::Labelled {
            launcher, input, ..
        } => Some(rank_time_bins(input, launcher, first.rank, (a, b), 300, of)),
        Source::Files(files) => match files.files.iter().find(|f| f.0 == first.rank) {
            Some((_, file)) => {
                let input =
                    profilednn_verbose::LogInput::open(file).context("cannot read the log")?;
                let mut bins = time_bins(input, a, b, 300);
                bins.of = Some(of);
                Some(bins)
            }
            None => None,
        },
        Source::Single(_) => None,
    })
}

/// The HTML report: everything of the summary plus every unique primitive, the roofline over all
/// of them, and a timeline when the (single, re-readable) log has timestamps.
fn write_html(path: &std::path::Path, logs: &[PathBuf], parts: &HtmlParts) -> Result<()> {
    let profile = parts.profile;
    let efficiency = parts
        .machine
        .map(|m| profilednn_analysis::efficiency(profile, m, usize::MAX));
    let timeline = match (logs, parts.ranks) {
        ([log], [set]) if log.as_os_str() != "-" => rank_timeline(log, set)?,
        ([log], []) if log.as_os_str() != "-" => match profile.timestamps {
            Some((first, last)) => {
                let input =
                    profilednn_verbose::LogInput::open(log).context("cannot read the log")?;
                Some(profilednn_analysis::timeline::time_bins(
                    input, first, last, 300,
                ))
            }
            None => None,
        },
        _ => None,
    };
    let page = profilednn_report::html::report_page(&profilednn_report::html::ReportPage {
        summary: parts.summary,
        profile,
        advice: parts.advice,
        efficiency: efficiency.as_ref(),
        timeline: timeline.as_ref(),
        torch: parts.torch,
        ranks: parts.ranks,
    });
    crate::output::write_file(path, &page)?;
    eprintln!(
        "profilednn: HTML report written to {} ({} KB)",
        path.display(),
        page.len() / 1024
    );
    Ok(())
}
