//! `profilednn project LOG [--torch-trace TRACE] --to TARGET.json … [--from SOURCE.json]`: the
//! step on machines not at hand. Reads the files and renders; the method is
//! `profilednn_project::target`.

use crate::output::outln;
use crate::ExitCode;
use anyhow::Result;
use profilednn_project::target::{self, source, MachineProjection, Options, Source, TargetProfile};
use std::path::{Path, PathBuf};

/// What `project --to` was given.
pub struct ToArgs<'a> {
    pub log: &'a Path,
    pub trace: Option<&'a Path>,
    pub to: &'a [PathBuf],
    pub from: Option<&'a Path>,
    pub threads: Option<usize>,
    pub iterations: Option<u64>,
    pub format: crate::format::Format,
    pub epoch: target::epoch::EpochRequest,
}

pub fn run(a: ToArgs) -> Result<ExitCode> {
    a.epoch.check(a.to.len())?;
    let profile = crate::load::profile_with(a.log, None, a.iterations, true, a.trace.is_some())?;
    let targets: Vec<TargetProfile> =
        a.to.iter()
            .map(|p| Ok(source::read_target(p)?))
            .collect::<Result<_>>()?;
    let (source, source_file) = source::source_of(a.from, &profile)?;
    let logged = profilednn_project::project::mismatch::logged_of(a.log);
    let join = match a.trace {
        // The steady step: the warm-up iteration does not move with the roofs.
        Some(t) => Some(crate::load::torch_join_steady(t, a.log)?),
        None => None,
    };
    let input = target::Input {
        profile: &profile,
        logged: logged.as_ref(),
        join: join.as_ref(),
    };
    let opts = Options { threads: a.threads };
    let doc = MachineProjection {
        schema: target::SCHEMA,
        log: a.log.display().to_string(),
        trace: a.trace.map(|t| t.display().to_string()),
        source: Source {
            name: source.name.clone(),
            profile: source_file,
        },
        log_threads: profile.metadata.threads.map(|t| t as usize),
        per_iteration: profile.iterations.as_ref().is_some_and(|i| i.count > 0),
        targets: targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut p = target::project_to(&input, &source, t, &opts);
                p.epoch = target::epoch::epoch(&p, &a.epoch, i);
                p
            })
            .collect(),
    };
    let mut doc = doc;
    target::epoch::order(&mut doc.targets);
    use crate::format::Format;
    match a.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&doc)?),
        Format::Html => outln!("{}", profilednn_report::html::machines_page(&doc)),
        _ => crate::output::write(None, profilednn_report::machine_projection::render(&doc))?,
    }
    Ok(ExitCode::SUCCESS)
}
