//! From findings to actions: rules over a profile, each finding with its evidence, an estimated
//! gain and the concrete change to try.
//!
//! ```
//! // A log whose convolution ran oneDNN's reference kernel, for 3 of its 3.5 ms.
//! let mut tally = profilednn_analysis::Tally::default();
//! tally.consume_chunk(0, b"onednn_verbose,v1,primitive,exec,cpu,convolution,ref:any,\
//!     forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 \
//!     dst:f32::blocked:abcd::f0,,,mb2_ic16oc16_ih8oh8kh3ph1_iw8ow8kw3pw1,3.0
//! onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_training,\
//!     data:f32::blocked:abcd::f0,,alg:eltwise_relu,2x16x8x8,0.5\n", true);
//! let profiles = [profilednn_analysis::Profile::from_tally("t.log".into(), &tally, &Default::default())];
//! let merged = profilednn_analysis::Profile::merged(&profiles);
//! let summary = profilednn_analysis::summarize_merged(&profiles, &merged, &Default::default());
//! let evidence = profilednn_advice::Evidence::from_profiles(&profiles, &merged, &summary, None, None);
//! let advice = profilednn_advice::advise(&evidence, &Default::default());
//! assert_eq!(advice.findings[0].id, "reference-implementation");
//! ```
//!
//! Every rule is one module in `rules/` with a stable id (`reorder-overhead`, …) and its
//! thresholds in [`Thresholds`]. A rule either fires (a [`Finding`]) or says why it did not
//! ([`RuleOutcome`]): "not applicable, the log has no creation lines" is information too.
#![forbid(unsafe_code)]

mod finding;
mod log_machine;
mod projection;
mod rules;
mod step_what_if;

pub use finding::{Advice, Finding, RuleOutcome, SCHEMA};
pub use log_machine::LogMachine;
pub use projection::{Change, Layout, NotRecommended, Projected};
pub use step_what_if::{StepBaseline, StepWhatIf, TRUSTED_DRIFT};

use profilednn_analysis::{Profile, Summary};
use serde::Serialize;

/// Thresholds of every rule (each an option of `profilednn advise`).
#[derive(Debug, Clone, Serialize)]
pub struct Thresholds {
    /// `reorder-overhead`: reorders' share of oneDNN time.
    pub reorder_share: f64,
    /// `reference-implementation`: share of oneDNN time in reference kernels.
    pub reference_share: f64,
    /// `f32-on-bf16-hardware`: share of oneDNN time in f32 compute primitives.
    pub f32_compute_share: f64,
    /// `bf16-without-bf16-units`: share of oneDNN time in bf16 compute primitives on a CPU
    /// without bf16 units.
    pub bf16_emulated_share: f64,
    /// `unfused-post-ops`: share of time in separate eltwise/binary/normalization passes over a
    /// convolution's or matmul's output.
    pub unfused_share: f64,
    /// `backward-weights-dominance`: backward-weights time over forward time.
    pub bwd_weights_ratio: f64,
    /// `tiny-primitives`: a call this short (µs, mean) is "tiny"…
    pub tiny_us: f64,
    /// …and fires when tiny calls are at least this share of all calls.
    pub tiny_call_share: f64,
    /// `time-outside-onednn`: fires when oneDNN is busy less than this share of the timestamps'
    /// wall-clock span.
    pub busy_share: f64,
    /// `creation-cache-misses`: repeated misses of the same primitive that fire the rule.
    pub repeated_misses: u64,
    /// `low-roofline-efficiency`: share of the roofline bound below which a primitive is slow…
    pub roofline_efficiency: f64,
    /// …and the share of oneDNN time it must lose to be worth a finding.
    pub roofline_lost_share: f64,
    /// `loss-as-elementwise-ops`: share of the training step (PyTorch view).
    pub loss_share: f64,
    /// `normalization-as-elementwise-ops`: share of the step in separate mul/add passes.
    pub normalization_share: f64,
    /// `optimizer-as-many-ops`: ops per iteration inside `Optimizer.step`.
    pub optimizer_ops: f64,
    /// …and the share of the step the optimizer must take (a fused step can still show a few
    /// cheap bookkeeping ops per parameter).
    pub optimizer_share: f64,
    /// `data-loading-stall`: share of the step spent loading data on the training thread.
    pub data_share: f64,
    /// `rank-imbalance`: the slowest rank's oneDNN time over the median rank's.
    pub rank_imbalance: f64,
    /// `timings-polluted`: share of oneDNN time in primitives whose identical calls ran ten
    /// times their fastest or more.
    pub polluted_share: f64,
    /// `gemm-outside-onednn`: share of the step in GEMMs that ran in PyTorch's BLAS.
    pub framework_gemm_share: f64,
    /// `attention-share`: share of the step in attention kernels outside oneDNN.
    pub attention_share: f64,
    /// `elementwise-unfused`: share of the step in element-wise and normalization ops outside
    /// oneDNN, in an eager (not compiled) model.
    pub elementwise_share: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            reorder_share: 0.05,
            reference_share: 0.01,
            f32_compute_share: 0.2,
            bf16_emulated_share: 0.05,
            unfused_share: 0.03,
            bwd_weights_ratio: 2.0,
            tiny_us: 10.0,
            tiny_call_share: 0.5,
            busy_share: 0.6,
            repeated_misses: 1,
            roofline_efficiency: 0.25,
            roofline_lost_share: 0.05,
            loss_share: 0.01,
            normalization_share: 0.01,
            optimizer_ops: 20.0,
            optimizer_share: 0.005,
            data_share: 0.1,
            rank_imbalance: 1.1,
            polluted_share: 0.05,
            framework_gemm_share: 0.15,
            attention_share: 0.1,
            elementwise_share: 0.3,
        }
    }
}

/// What the rules look at.
#[derive(Clone, Copy)]
pub struct Evidence<'a> {
    /// The merged profile of all logs.
    pub profile: &'a Profile,
    pub summary: &'a Summary,
    /// Logs (ranks) that ran side by side.
    pub ranks: usize,
    /// Cores of the machine the log ran on, when known (`--cores`, or a machine profile).
    pub cores: Option<usize>,
    /// Where `cores` came from (`--cores`, `the machine profile`, `this machine, where the log
    /// looks recorded`): a count the tool found itself is said to be so, so that a log from
    /// elsewhere can be given its own with `--cores`.
    pub cores_from: Option<&'static str>,
    /// Without `cores`, why they are not known although a count was at hand: the log ran on
    /// another machine than the machine profile's or this one (its ISA differs, or its threads
    /// exceed their hardware threads). Its threads against another machine's cores once read
    /// "56 threads on 2 cores: oversubscribed" beside a roofline saying the log came from
    /// elsewhere.
    pub cores_unknown: Option<&'static str>,
    /// Sockets of that machine, when known (`advise --sockets`, or a machine profile's
    /// `sockets`): where ranks must not span.
    pub sockets: Option<usize>,
    /// Physical cores of that machine (SMT siblings once), when known (`advise --cores`, or a
    /// machine profile's `physical_cores`): whether a rank spans sockets is judged by them,
    /// never by hardware threads.
    pub physical_cores: Option<usize>,
    /// The PyTorch view of the same run, when a profiler trace was given.
    pub torch: Option<&'a profilednn_torchtrace::TorchJoin>,
    /// The same training recorded the other way, eager against compiled (`advise --against`):
    /// `compile-vs-eager` says which step is faster and why.
    pub twin: Option<&'a profilednn_torchtrace::TorchJoin>,
    /// What-if projections of this log onto this machine (empty: the rules use their rules of
    /// thumb).
    pub projections: &'a [Projected],
    /// Whole-step what-ifs (framework ops replayed through PyTorch, `advise --project
    /// --torch-trace`): the step as recorded and changed, on this machine.
    pub step_what_ifs: &'a [StepWhatIf],
    /// The node of each rank's log, as (log source, node), when the launcher or the logs'
    /// layout named nodes: `rank-imbalance` tells a slow node from a slow rank with it.
    pub nodes: &'a [(String, String)],
    /// How the ranks were launched, when `record --ranks` wrote it beside the log
    /// (`launch-config`).
    pub launch: Option<&'a profilednn_analysis::ranks::launch::Launch>,
}

impl<'a> Evidence<'a> {
    /// The evidence of logs that ran side by side: `merged` is
    /// [`Profile::merged`](profilednn_analysis::Profile::merged) of `profiles` and `summary` its
    /// summary, both computed once by the caller, which needs them for its own output too.
    pub fn from_profiles(
        profiles: &[Profile],
        merged: &'a Profile,
        summary: &'a Summary,
        cores: Option<usize>,
        torch: Option<&'a profilednn_torchtrace::TorchJoin>,
    ) -> Evidence<'a> {
        Evidence {
            profile: merged,
            summary,
            ranks: profiles.len(),
            cores,
            sockets: None,
            physical_cores: None,
            cores_from: None,
            cores_unknown: None,
            torch,
            twin: None,
            projections: &[],
            step_what_ifs: &[],
            nodes: &[],
            launch: None,
        }
    }

    /// The same evidence with how the ranks were launched.
    pub fn with_launch(
        self,
        launch: Option<&'a profilednn_analysis::ranks::launch::Launch>,
    ) -> Evidence<'a> {
        Evidence { launch, ..self }
    }

    /// The same evidence with the run's twin, recorded eager or compiled the other way.
    pub fn with_twin(self, twin: Option<&'a profilednn_torchtrace::TorchJoin>) -> Evidence<'a> {
        Evidence { twin, ..self }
    }

    /// The same evidence with each rank log's node.
    pub fn with_nodes(self, nodes: &'a [(String, String)]) -> Evidence<'a> {
        Evidence { nodes, ..self }
    }

    /// The same evidence with what-if projections (from `--replay` or `--project`).
    pub fn with_projections(self, projections: &'a [Projected]) -> Evidence<'a> {
        Evidence {
            projections,
            ..self
        }
    }

    /// The same evidence with whole-step what-ifs (`advise --project --torch-trace`).
    pub fn with_step_what_ifs(self, step_what_ifs: &'a [StepWhatIf]) -> Evidence<'a> {
        Evidence {
            step_what_ifs,
            ..self
        }
    }

    /// The same evidence with where its core count came from.
    pub fn with_cores_from(self, cores_from: Option<&'static str>) -> Evidence<'a> {
        Evidence { cores_from, ..self }
    }

    /// The same evidence with why the cores of the log's machine are unknown.
    pub fn with_cores_unknown(self, cores_unknown: Option<&'static str>) -> Evidence<'a> {
        Evidence {
            cores_unknown,
            ..self
        }
    }

    /// The same evidence with the machine's socket count.
    pub fn with_sockets(self, sockets: Option<usize>) -> Evidence<'a> {
        Evidence { sockets, ..self }
    }

    /// The same evidence with the machine's physical core count.
    pub fn with_physical_cores(self, physical_cores: Option<usize>) -> Evidence<'a> {
        Evidence {
            physical_cores,
            ..self
        }
    }
}

/// A what-if replay a rule would use, and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedWhatIf {
    pub rule: &'static str,
    pub change: Change,
}

/// The what-if replays whose projection the rules would use on this evidence: those of rules
/// that fire, or would fire but for a CPU without bf16 units (the projection is what shows
/// the slow-down there). `advise --project` runs them.
pub fn wanted_what_ifs(ev: &Evidence, t: &Thresholds) -> Vec<WantedWhatIf> {
    let mut v = rules::wanted(ev, t);
    // The like-for-like baseline: the log's own oneDNN (PyTorch bundles its own) may differ
    // from the replaying one for reasons that are not the change's.
    if !v.is_empty() {
        v.push(WantedWhatIf {
            rule: AS_LOGGED_BASELINE,
            change: Change::default(),
        });
    }
    v
}

/// What `advise --project` runs the as-logged replay for.
pub const AS_LOGGED_BASELINE: &str = "the as-logged baseline";

/// When the log's timings look polluted (`timings-polluted` would fire): why, and the
/// primitives whose identical calls ran far apart. `replay` and `project` withhold the ratios
/// built on them, as `advise` withholds its projections' speed-ups.
pub fn log_pollution(
    ev: &Evidence,
    t: &Thresholds,
) -> Option<(String, Vec<std::sync::Arc<profilednn_model::Primitive>>)> {
    let p = rules::polluted::detect(ev);
    p.fires(t).then(|| {
        (
            p.reason(),
            p.primitives
                .iter()
                .map(|(e, _)| e.primitive.clone())
                .collect(),
        )
    })
}

/// Runs every rule. On a log whose timings look polluted (`timings-polluted` fires), every
/// projection carries why its speed-up against the log is withheld.
pub fn advise(ev: &Evidence, t: &Thresholds) -> Advice {
    let pollution = rules::polluted::detect(ev);
    let marked: Vec<Projected>;
    let ev = &if pollution.fires(t) && !ev.projections.is_empty() {
        let why = pollution.reason();
        marked = ev
            .projections
            .iter()
            .map(|p| Projected {
                log_polluted: Some(why.clone()),
                ..p.clone()
            })
            .collect();
        ev.with_projections(&marked)
    } else {
        *ev
    };
    let mut findings = Vec::new();
    let mut outcomes = Vec::new();
    let mut not_recommended = Vec::new();
    for rule in rules::ALL {
        match (rule.check)(ev, t) {
            Ok(Finding {
                not_recommended: Some(why),
                projection,
                ..
            }) => {
                outcomes.push(RuleOutcome {
                    id: rule.id,
                    fired: false,
                    why_not: Some(why.clone()),
                });
                not_recommended.push(NotRecommended {
                    id: rule.id,
                    why,
                    projection,
                });
            }
            Ok(f) => {
                outcomes.push(RuleOutcome {
                    id: rule.id,
                    fired: true,
                    why_not: None,
                });
                findings.push(f);
            }
            Err(why) => outcomes.push(RuleOutcome {
                id: rule.id,
                fired: false,
                why_not: Some(why),
            }),
        }
    }
    // With timestamps, each finding's share of the wall-clock step: what it concerns (its
    // evidence's time, or the time outside oneDNN, else its gain) over the span per log. A rule
    // that knows its share better (of the trace's step, of the recorded step) has set it.
    let wall = ev
        .summary
        .wall_span_ms
        .filter(|w| *w > 0.0)
        .map(|w| w * ev.ranks.max(1) as f64)
        .or_else(|| rules::trace_span(ev));
    if let Some(wall) = wall {
        for f in findings.iter_mut().filter(|f| f.step_share.is_none()) {
            let concern = ["time_ms", "outside_ms"]
                .iter()
                .find_map(|k| f.evidence.get(*k).and_then(|v| v.as_f64()))
                .or(f.gain_ms);
            f.step_share = concern.map(|c| (c / wall).min(1.0));
        }
    }
    // Polluted timings come first: every other figure (a share, a ratio, a gain) is built on
    // them, so the doubt is read before the findings it qualifies.
    findings.sort_by(|a, b| {
        (b.id == rules::polluted::ID)
            .cmp(&(a.id == rules::polluted::ID))
            .then(
                b.step_share
                    .unwrap_or(0.0)
                    .total_cmp(&a.step_share.unwrap_or(0.0)),
            )
            .then(
                b.gain_ms
                    .unwrap_or(0.0)
                    .total_cmp(&a.gain_ms.unwrap_or(0.0)),
            )
    });
    Advice {
        schema: SCHEMA,
        total_time_ms: ev.summary.total_time_ms,
        iterations: ev.summary.iterations.as_ref().map(|i| i.count),
        thresholds: t.clone(),
        findings,
        rules: outcomes,
        projections: ev.projections.to_vec(),
        step_projections: ev.step_what_ifs.to_vec(),
        not_recommended,
    }
}
