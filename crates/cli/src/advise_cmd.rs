//! `profilednn advise`: rules that turn a profile into actions.

mod this_machine;
pub(crate) use this_machine::LogMachine;

pub use crate::advise_args::{AdviseArgs, Format};
use crate::ExitCode;
use anyhow::Result;
use profilednn_advice::advise;
use profilednn_analysis::{summarize_merged, Profile, SummaryOptions};

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
    let machine = profilednn_project::machine_file::load(args.machine.as_deref())?;
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
        profilednn_analysis::torch_join::set_roofs(j, summary.efficiency.as_ref(), roofs.as_ref());
    }
    let thresholds = args.thresholds.thresholds();
    let launch = crate::load::launch_of(&args.logs)?;
    let evidence = log_machine
        .evidence(&profiles, &merged, &summary, torch.as_ref(), &nodes)
        .with_launch(launch.as_ref());
    let projections = crate::advice_what_ifs::projections(
        &args.logs,
        &profiles,
        &evidence,
        &thresholds,
        (
            &args.replay,
            args.project.then_some(args.dnnl_lib.as_deref()),
            args.no_progress,
        ),
        args.torch_trace.is_some() && args.project,
    )?;
    // With the trace, --project judges the changes on the whole step too (framework ops
    // replayed through PyTorch), which is what a transformer's advice needs.
    // A replay file with the whole step gives its what-if too.
    let steps = crate::advice_what_ifs::step_what_ifs(
        &args.logs,
        &merged,
        args.torch_trace.as_deref(),
        args.project,
        (&args.replay, &projections),
    )?;
    let advice = advise(
        &evidence
            .with_projections(&projections)
            .with_step_what_ifs(&steps),
        &thresholds,
    );
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&advice)? + "\n",
        _ => profilednn_report::advice::render(&advice, false),
    };
    crate::output::write(args.output.as_deref(), text)?;
    Ok(crate::output::read_errors_status(
        &summary.read_errors,
        "advice",
    ))
}
