//! `replay --torch-trace`: the whole step's framework ops, replayed through PyTorch beside the
//! log's primitives, or alone where no oneDNN can be loaded.

use crate::replay_args::{AsType, LayoutArg, ReplayArgs};
use crate::ExitCode;
use anyhow::Result;
use profilednn_analysis::Profile;
use profilednn_replay::Replay;

/// `--torch-trace` where no oneDNN can be loaded: the whole step replays through PyTorch (its
/// oneDNN calls among its ops, in PyTorch's own oneDNN), and the results file holds no
/// primitive of the log (`project` carries the log's oneDNN figures over).
pub(crate) fn without_onednn(
    args: &ReplayArgs,
    trace: &std::path::Path,
    why: &str,
) -> Result<ExitCode> {
    eprintln!(
        "profilednn: no oneDNN to load ({why}): the log's primitives are not replayed; the whole \
         step replays through PyTorch, whose ops call its own oneDNN"
    );
    let profile = crate::load::profile_with(&args.log, None, None, args.no_progress, true)?;
    let units = units(trace, &args.log)?;
    let replay = Replay {
        schema: profilednn_replay::SCHEMA.into(),
        source: args.log.display().to_string(),
        onednn: "not loaded".into(),
        library: String::new(),
        onednn_isa: None,
        cpu: profilednn_machine::cpu::model_name(),
        threads: args.threads.map(|t| t.to_string()),
        binding: None,
        mode: args.replay_mode(),
        sequence: None,
        what_if: None,
        results: Vec::new(),
        framework: Some(framework(args, trace, &units, &profile)?),
    };
    crate::replay_output::write(args, &replay, &profile, &[])
}

/// The trace's steady iteration, read before any replay: a trace of another run than `log`'s
/// is refused before the oneDNN replay spends its time.
pub(crate) fn units(
    trace: &std::path::Path,
    log: &std::path::Path,
) -> Result<profilednn_torchtrace::step_units::StepUnits> {
    Ok(profilednn_torchreplay::step::units_of(trace, Some(log))?)
}

/// The whole step's framework ops, replayed through PyTorch from the profiler trace's `units`.
pub(crate) fn framework(
    args: &ReplayArgs,
    trace: &std::path::Path,
    units: &profilednn_torchtrace::step_units::StepUnits,
    profile: &Profile,
) -> Result<profilednn_replay::framework::FrameworkReplay> {
    if args.layout == LayoutArg::Plain {
        eprintln!(
            "profilednn: --layout plain rewrites the oneDNN primitives only: the framework ops \
             replay in their recorded layout"
        );
    }
    let recorded = profilednn_torchtrace::recorded_python::of_log(&args.log);
    let step = profilednn_torchreplay::step::StepArgs {
        trace,
        recorded_python: recorded.as_deref(),
        python: args.python.as_deref(),
        threads: args
            .threads
            .map(|t| t as u64)
            .or(profile.metadata.threads.map(u64::from)),
        bf16: args.as_type == Some(AsType::Bf16),
        channels_last: args.layout == LayoutArg::ChannelsLast,
        batch: args.batch,
        warmup: args.warmup,
        onednn_verbose: profile.metadata.verbose_recording(),
    };
    Ok(profilednn_torchreplay::step::replay_units(&step, units)?)
}
