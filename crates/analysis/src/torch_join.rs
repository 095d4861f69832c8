//! The PyTorch trace ([`profilednn_torchtrace`]) joined with a oneDNN log read here: the
//! trace crate sits below this one and places the executions it is given; this file walks
//! the log's events into it, and hands the primitives' roofline to the whole step.

use crate::efficiency::Efficiency;
use crate::events::{for_each_event, Event};
use crate::EventKind;
use profilednn_torchtrace::framework::Roofs;
use profilednn_torchtrace::whole_step::{Lost, Primitives};
use profilednn_torchtrace::{Exec, LogEvent, TorchJoin, TorchTrace};
use profilednn_verbose::LogInput;

/// Joins `trace` with the primitives of the log at `log` ([`profilednn_torchtrace::join`]).
pub fn join(trace: &TorchTrace, log: LogInput) -> TorchJoin {
    profilednn_torchtrace::join(trace, |place| walk(log, place))
}

/// [`join`] with the first iteration left out as warm-up ([`profilednn_torchtrace::join_steady`]):
/// the steady step a projection onto another machine moves.
pub fn join_steady(trace: &TorchTrace, log: LogInput) -> TorchJoin {
    profilednn_torchtrace::join_steady(trace, |place| walk(log, place))
}

/// Why a trace could not be joined with its log file.
#[derive(Debug, thiserror::Error)]
pub enum JoinFilesError {
    #[error(transparent)]
    Trace(#[from] profilednn_torchtrace::TraceError),
    #[error("cannot read the log")]
    Log(#[source] profilednn_verbose::OpenError),
    /// The trace is of another run than the log's.
    #[error(transparent)]
    AnotherRun(#[from] profilednn_torchtrace::same_run::AnotherRun),
}

/// The trace at `trace` joined with the log at `log` ([`join`], or with `steady` [`join_steady`]):
/// a trace of another run is refused ([`TorchJoin::of_this_run`]); what makes the join doubtful
/// (no timestamps, part of the iterations) is in its `warnings`, for the caller to print.
pub fn of_files(
    trace: &std::path::Path,
    log: &std::path::Path,
    steady: bool,
) -> Result<TorchJoin, JoinFilesError> {
    let tr = profilednn_torchtrace::read_trace(trace)?;
    let input = LogInput::open(log).map_err(JoinFilesError::Log)?;
    let j = if steady {
        join_steady(&tr, input)
    } else {
        join(&tr, input)
    };
    j.of_this_run(&tr, trace, log)?;
    Ok(j)
}

/// The log's iteration markers and executions, in log order, into the join's sink.
fn walk(log: LogInput, place: &mut dyn FnMut(LogEvent<'_>)) {
    for_each_event(log, |e| match e {
        Event::Iteration { .. } => place(LogEvent::Iteration),
        Event::Primitive(p) if p.kind == EventKind::Exec => place(LogEvent::Exec(Exec {
            kind: &p.primitive.kind,
            timestamp_ms: p.timestamp_ms,
            time_ps: p.time_ps,
        })),
        _ => {}
    });
}

/// The span of the log's executions on the epoch clock (ms), when they carry timestamps: one
/// pass over the log, for the commands that read the trace without joining it (replay, plan,
/// project); [`profilednn_torchtrace::same_run::check`] compares the trace's clock with it.
pub fn log_span_ms(log: LogInput) -> Option<(f64, f64)> {
    let mut span: Option<(f64, f64)> = None;
    for_each_event(log, |e| {
        if let Event::Primitive(p) = e {
            if let (EventKind::Exec, Some(ts)) = (p.kind, p.timestamp_ms) {
                let end = ts + p.time_ps.unwrap_or(0) as f64 / 1e9;
                span = Some(span.map_or((ts, end), |(a, b)| (a.min(ts), b.max(end))));
            }
        }
    });
    span
}

/// [`TorchJoin::set_roofs`] with the primitives' roofline of the same log (`primitives`), else
/// `machine`'s roofs: the framework ops and the whole step against the roofs the report used.
pub fn set_roofs(
    j: &mut TorchJoin,
    primitives: Option<&Efficiency>,
    machine: Option<&profilednn_machine::MachineProfile>,
) {
    j.set_roofs(primitives.map(Efficiency::for_whole_step).as_ref(), machine);
}

impl Efficiency {
    /// The primitives' roofline as the whole step takes it
    /// ([`TorchJoin::set_roofs`]): their roofs, totals and each unique primitive's time lost.
    pub fn for_whole_step(&self) -> Primitives<'_> {
        Primitives {
            roofs: Roofs {
                machine: &self.machine,
                peak_gflops: &self.peak_gflops,
                memory_gbps: self.memory_gbps,
                suspect: &self.suspect,
            },
            measured_ms: self.measured_ms,
            roofline_ms: self.roofline_ms,
            lost_ms: self.lost_ms,
            lost: self
                .primitives
                .iter()
                .map(|p| Lost {
                    name: if p.prop_kind == "undef" || p.prop_kind.is_empty() {
                        format!("{} {}", p.prim_kind, p.shapes)
                    } else {
                        format!("{} {} {}", p.prim_kind, p.prop_kind, p.shapes)
                    },
                    runs_in: "oneDNN".into(),
                    lost_ms: p.lost_ms.unwrap_or(0.0),
                    efficiency: p.efficiency,
                })
                .collect(),
        }
    }
}
