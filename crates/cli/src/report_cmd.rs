//! `profilednn report`: loads the logs (and a trace), summarises, advises, and writes the
//! document in the form asked for.

pub use crate::report_args::{Format, ReportArgs};
use crate::ExitCode;
use anyhow::{Context, Result};
use profilednn_advice::{advise, Thresholds};
use profilednn_analysis::{summarize_merged, GroupKey, Profile, SummaryOptions};
use profilednn_report::report_doc::{self, ReportDoc, TextLayout};
use std::io::IsTerminal;
use std::path::PathBuf;

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
        profilednn_project::machine_file::load(args.machine.as_deref())?
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
        profilednn_analysis::torch_join::set_roofs(
            j,
            summary.efficiency.as_ref(),
            machine.as_ref(),
        );
    }
    // How the ranks were launched (`record --ranks`), for the advice as `advise` reads it.
    let launch = crate::load::launch_of(&args.logs)?;
    let evidence = || {
        log_machine
            .evidence(&profiles, &merged, &summary, torch.as_ref(), &nodes)
            .with_launch(launch.as_ref())
    };
    let thresholds = Thresholds::default();
    let whole_step = args.torch_trace.is_some() && args.project && !args.no_advice;
    let projections = crate::advice_what_ifs::projections(
        &args.logs,
        &profiles,
        &evidence(),
        &thresholds,
        (
            &args.replay,
            args.project.then_some(args.dnnl_lib.as_deref()),
            args.no_progress,
        ),
        whole_step,
    )?;
    // As `advise`: with the trace, --project judges the changes on the whole step too, and a
    // replay file with the whole step gives its what-if.
    let steps = crate::advice_what_ifs::step_what_ifs(
        &args.logs,
        &merged,
        args.torch_trace.as_deref(),
        whole_step,
        (&args.replay, &projections),
    )?;
    // Computed at most once, for the HTML page and the terminal or JSON output alike.
    let advice_once = std::cell::OnceCell::new();
    let advice = || {
        advice_once.get_or_init(|| {
            advise(
                &evidence()
                    .with_projections(&projections)
                    .with_step_what_ifs(&steps),
                &thresholds,
            )
        })
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
    let doc = ReportDoc {
        summary: &summary,
        ranks: &ranks,
        torch: torch.as_ref(),
        // CSV is the breakdown alone: no advice computed for it.
        advice: (!args.no_advice && args.format != Format::Csv).then(advice),
    };
    let text = match args.format {
        Format::Table => report_doc::text(
            &doc,
            &TextLayout {
                top: args.top,
                ranks: args.ranks.clone(),
                tty: std::io::stdout().is_terminal() && args.output.is_none(),
            },
        ),
        Format::Json => serde_json::to_string_pretty(&report_doc::json(&doc)?)? + "\n",
        Format::Csv => profilednn_report::csv_out::render(&summary)?,
        Format::Html => unreachable!("report takes --html FILE, not --format html"),
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

/// What the HTML page shows, computed once by [`run`].
struct HtmlParts<'a> {
    profile: &'a Profile,
    summary: &'a profilednn_analysis::Summary,
    machine: Option<&'a profilednn_machine::MachineProfile>,
    advice: Option<&'a profilednn_advice::Advice>,
    torch: Option<&'a profilednn_torchtrace::TorchJoin>,
    ranks: &'a [profilednn_analysis::ranks::RankSet],
}

/// The HTML report: everything of the summary plus every unique primitive, the roofline over all
/// of them, and a timeline when the (single, re-readable) log has timestamps.
fn write_html(path: &std::path::Path, logs: &[PathBuf], parts: &HtmlParts) -> Result<()> {
    let profile = parts.profile;
    let efficiency = parts
        .machine
        .map(|m| profilednn_analysis::efficiency(profile, m, usize::MAX));
    let timeline = match logs {
        [log] => profilednn_analysis::timeline::of_log(log, profile.timestamps, parts.ranks, 300)?,
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
