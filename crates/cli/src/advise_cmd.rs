//! `profilednn advise`: rules that turn a profile into actions.

pub use crate::advise_args::{AdviseArgs, Format};
use crate::advised::{Judged, Request};
use crate::ExitCode;
use anyhow::Result;
use profilednn_analysis::SummaryOptions;

pub fn run(args: AdviseArgs) -> Result<ExitCode> {
    let judged = Judged::load(Request {
        logs: &args.logs,
        read: (args.threads, args.iterations, args.no_progress),
        torch_trace: args.torch_trace.as_deref(),
        machine: Some(args.machine.as_deref()),
        cores: args.cores,
        sockets: args.sockets,
        summary: SummaryOptions::default(),
    })?
    .with_twin(args.against.as_deref())?;
    let thresholds = args.thresholds.thresholds();
    // With the trace, --project judges the changes on the whole step too (framework ops
    // replayed through PyTorch), which is what a transformer's advice needs.
    let what_ifs = judged.what_ifs(
        &thresholds,
        &args.replay,
        args.project.then_some(args.dnnl_lib.as_deref()),
    )?;
    let advice = judged.advice(&thresholds, &what_ifs);
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&advice)? + "\n",
        _ => profilednn_report::advice::render(&advice, false),
    };
    crate::output::write(args.output.as_deref(), text)?;
    Ok(crate::output::read_errors_status(
        &judged.summary.read_errors,
        "advice",
    ))
}
