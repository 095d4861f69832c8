//! What `advise` and `report` both judge, read once in one order: the logs merged and
//! summarised, the trace joined, the launch and the log's machine, then the what-ifs the advice
//! takes. One flow, so that `report`'s advice is `advise`'s for the same flags.

use anyhow::Result;
use profilednn_advice::{advise, Advice, Evidence, LogMachine, Projected, StepWhatIf, Thresholds};
use profilednn_analysis::ranks::{launch::Launch, RankSet};
use profilednn_analysis::{summarize_merged, Profile, Summary, SummaryOptions};
use profilednn_machine::MachineProfile;
use profilednn_torchtrace::TorchJoin;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// The flags `advise` and `report` read their inputs with.
pub(crate) struct Request<'a> {
    pub logs: &'a [PathBuf],
    /// `--threads`, `--iterations` and `--no-progress`: how the logs are read.
    pub read: (Option<usize>, Option<u64>, bool),
    pub torch_trace: Option<&'a Path>,
    /// `--machine`; `None`: no machine profile is read (`report --no-roofline`).
    pub machine: Option<Option<&'a Path>>,
    /// `advise --cores/--sockets` (none for `report`).
    pub cores: Option<usize>,
    pub sockets: Option<usize>,
    /// The summary's `--by` and `--top`; its machine is the one read here.
    pub summary: SummaryOptions,
}

/// The what-ifs the advice takes: the oneDNN primitives' and the whole step's.
pub(crate) struct WhatIfs {
    pub projections: Vec<Projected>,
    pub steps: Vec<StepWhatIf>,
}

/// The inputs read by [`Judged::load`], which the advice and the report's sections are of.
pub(crate) struct Judged {
    logs: Vec<PathBuf>,
    torch_trace: Option<PathBuf>,
    no_progress: bool,
    pub profiles: Vec<Profile>,
    pub ranks: Vec<RankSet>,
    nodes: Vec<(String, String)>,
    pub machine: Option<MachineProfile>,
    /// The logs merged when there are several (see [`Judged::merged`]).
    merged_many: Option<Profile>,
    log_machine: LogMachine,
    pub summary: Summary,
    pub torch: Option<TorchJoin>,
    /// The run recorded the other way, eager against compiled (`advise --against`).
    twin: Option<TorchJoin>,
    launch: Option<Launch>,
}

impl Judged {
    pub fn load(r: Request) -> Result<Judged> {
        // With a PyTorch trace, a log without a oneDNN line still has a step to judge.
        let (threads, iterations, no_progress) = r.read;
        let empty_ok = r.torch_trace.is_some();
        let loaded =
            crate::load::logs_and_ranks_with(r.logs, threads, iterations, no_progress, empty_ok)?;
        let nodes = profilednn_analysis::load::nodes_of(&loaded.ranks);
        let machine = match r.machine {
            Some(path) => profilednn_project::machine_file::load(path)?,
            None => None,
        };
        let merged = Profile::merged(&loaded.profiles);
        // --cores first; else the machine profile's (given or saved); else this machine's, when
        // the log looks recorded here.
        let log_machine = LogMachine::new(r.cores, r.sockets, machine.as_ref(), &merged.metadata);
        let options = SummaryOptions {
            machine: machine.clone(),
            ..r.summary
        };
        let summary = summarize_merged(&loaded.profiles, &merged, &options);
        let mut torch = crate::load::torch_join_of_logs(r.torch_trace, r.logs)?;
        if let Some(j) = torch.as_mut() {
            // The framework ops' rules rank time lost against the same roofs as the report's.
            let roofs = summary.efficiency.as_ref();
            profilednn_analysis::torch_join::set_roofs(j, roofs, machine.as_ref());
        }
        // How the ranks were launched (`record --ranks`).
        let launch = crate::load::launch_of(r.logs)?;
        let merged_many = match merged {
            Cow::Owned(m) => Some(m),
            Cow::Borrowed(_) => None,
        };
        Ok(Judged {
            logs: r.logs.to_vec(),
            torch_trace: r.torch_trace.map(Path::to_path_buf),
            no_progress,
            profiles: loaded.profiles,
            ranks: loaded.ranks,
            nodes,
            machine,
            merged_many,
            log_machine,
            summary,
            torch,
            twin: None,
            launch,
        })
    }

    /// The same inputs with the run's twin (`advise --against LOG TRACE`), its trace joined
    /// with its log as this run's is.
    pub fn with_twin(mut self, against: Option<&[PathBuf]>) -> Result<Judged> {
        if let Some([log, trace]) = against {
            self.twin = Some(crate::load::torch_join(trace, log)?);
        }
        Ok(self)
    }

    /// Merged once: the summary, the advice and the HTML page are all of this view.
    pub fn merged(&self) -> &Profile {
        self.merged_many.as_ref().unwrap_or(&self.profiles[0])
    }

    fn evidence(&self) -> Evidence<'_> {
        let (p, m, s) = (&self.profiles, self.merged(), &self.summary);
        self.log_machine
            .evidence(p, m, s, self.torch.as_ref(), &self.nodes)
            .with_launch(self.launch.as_ref())
            .with_twin(self.twin.as_ref())
    }

    /// The what-ifs of the `replay` files (first and in order), then with `project`
    /// (`--project`, its `--dnnl-lib`) those the rules want on this evidence, replayed here
    /// through oneDNN; then the whole step's: with `--project` and the trace, bf16 replayed here
    /// through PyTorch, and those of the replay files that hold the whole step.
    pub fn what_ifs(
        &self,
        thresholds: &Thresholds,
        replay: &[PathBuf],
        project: Option<Option<&Path>>,
    ) -> Result<WhatIfs> {
        let logs = &self.logs[..];
        let whole_step = self.torch_trace.is_some() && project.is_some();
        let mut projections = crate::advice_projections::from_files(logs, &self.profiles, replay)?;
        if let Some(dnnl_lib) = project {
            let wanted = profilednn_advice::wanted_what_ifs(&self.evidence(), thresholds);
            let of = (logs, &self.profiles[..]);
            let run = (dnnl_lib, self.no_progress, whole_step);
            projections.extend(crate::whatif_run::project(of, &wanted, run)?);
        }
        let mut steps = match (&self.torch_trace, whole_step) {
            (Some(t), true) => profilednn_project::project::step_what_if::what_ifs(
                t,
                logs.first().map(|l| l.as_path()),
                self.merged().metadata.threads.map(u64::from),
                self.merged().metadata.verbose_recording(),
            )?,
            _ => Vec::new(),
        };
        let files = &projections[..replay.len().min(projections.len())];
        steps.extend(crate::advice_projections::steps_from_files(replay, files)?);
        Ok(WhatIfs { projections, steps })
    }

    /// The advice on this evidence with `what_ifs`.
    pub fn advice(&self, thresholds: &Thresholds, what_ifs: &WhatIfs) -> Advice {
        let ev = self.evidence();
        let ev = ev.with_projections(&what_ifs.projections);
        advise(&ev.with_step_what_ifs(&what_ifs.steps), thresholds)
    }
}
