//! `profilednn report`: loads the logs (and a trace), summarises, advises, and writes the
//! document in the form asked for.

use crate::advised::{Judged, Request};
pub use crate::report_args::{Format, ReportArgs};
use crate::ExitCode;
use anyhow::{Context, Result};
use profilednn_advice::Thresholds;
use profilednn_analysis::{GroupKey, SummaryOptions};
use profilednn_report::report_doc::{self, ReportDoc, TextLayout};
use std::io::IsTerminal;
use std::path::PathBuf;

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let judged = Judged::load(Request {
        logs: &args.logs,
        read: (args.threads, args.iterations, args.no_progress),
        torch_trace: args.torch_trace.as_deref(),
        // Loaded once: the summary's efficiency section and the HTML page's roofline use it.
        machine: (!args.no_roofline).then_some(args.machine.as_deref()),
        // The machine profile's cores and sockets, as `advise` without `--cores/--sockets`.
        cores: None,
        sockets: None,
        summary: SummaryOptions {
            by: group_keys(&args)?,
            top: args.top,
            machine: None,
        },
    })?;
    let thresholds = Thresholds::default();
    // As `advise`: with the trace, --project judges the changes on the whole step too, and a
    // replay file with the whole step gives its what-if.
    let what_ifs = judged.what_ifs(
        &thresholds,
        &args.replay,
        args.project.then_some(args.dnnl_lib.as_deref()),
    )?;
    // Computed at most once, for the HTML page and the terminal or JSON output alike.
    let advice_once = std::cell::OnceCell::new();
    let advice = || advice_once.get_or_init(|| judged.advice(&thresholds, &what_ifs));
    if let Some(html) = &args.html {
        write_html(html, &args.logs, &judged, (!args.no_advice).then(advice))?;
    }
    let doc = ReportDoc {
        summary: &judged.summary,
        ranks: &judged.ranks,
        torch: judged.torch.as_ref(),
        // CSV is the breakdown alone: no advice computed for it.
        advice: (!args.no_advice && args.format != Format::Csv).then(advice),
    };
    write(&args, &render(&args, &doc)?)?;
    // A log that could not be read to its end is a partial result: say so in the exit code.
    Ok(crate::output::read_errors_status(
        &judged.summary.read_errors,
        "the report",
    ))
}

/// `--by`'s keys; without it, CSV's columns are the converter's keys and the other forms give
/// the standard breakdowns.
fn group_keys(args: &ReportArgs) -> Result<Option<Vec<GroupKey>>> {
    Ok(match &args.by {
        Some(keys) => Some(
            keys.iter()
                .map(|k| k.trim().parse::<GroupKey>())
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None if args.format == Format::Csv => Some(GroupKey::CONVERTER_DEFAULT.to_vec()),
        None => None,
    })
}

/// The report in the `--format` asked for.
fn render(args: &ReportArgs, doc: &ReportDoc) -> Result<String> {
    Ok(match args.format {
        Format::Table => report_doc::text(
            doc,
            &TextLayout {
                top: args.top,
                ranks: args.ranks.clone(),
                tty: std::io::stdout().is_terminal() && args.output.is_none(),
            },
        ),
        Format::Json => serde_json::to_string_pretty(&report_doc::json(doc)?)? + "\n",
        Format::Csv => profilednn_report::csv_out::render(doc.summary)?,
        Format::Html => unreachable!("report takes --html FILE, not --format html"),
    })
}

/// The report to stderr (`record`'s end of run), or to `--output` or stdout.
fn write(args: &ReportArgs, text: &str) -> Result<()> {
    if args.to_stderr {
        eprint!("{text}");
        return Ok(());
    }
    crate::output::write(args.output.as_deref(), text).context("cannot write the report")
}

/// The HTML report: everything of the summary plus every unique primitive, the roofline over all
/// of them, and a timeline when the (single, re-readable) log has timestamps.
fn write_html(
    path: &std::path::Path,
    logs: &[PathBuf],
    judged: &Judged,
    advice: Option<&profilednn_advice::Advice>,
) -> Result<()> {
    let profile = judged.merged();
    let efficiency = judged
        .machine
        .as_ref()
        .map(|m| profilednn_analysis::efficiency(profile, m, usize::MAX));
    let timeline = match logs {
        [log] => {
            profilednn_analysis::timeline::of_log(log, profile.timestamps, &judged.ranks, 300)?
        }
        _ => None,
    };
    let page = profilednn_report::html::report_page(&profilednn_report::html::ReportPage {
        summary: &judged.summary,
        profile,
        advice,
        efficiency: efficiency.as_ref(),
        timeline: timeline.as_ref(),
        torch: judged.torch.as_ref(),
        ranks: &judged.ranks,
    });
    crate::output::write_file(path, &page)?;
    eprintln!(
        "profilednn: HTML report written to {} ({} KB)",
        path.display(),
        page.len() / 1024
    );
    Ok(())
}
