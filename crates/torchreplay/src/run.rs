//! Sends the units to the helper and gathers its timings.

use crate::{Interpreter, TorchReplayError};
use profilednn_replay::framework::{FrameworkOpResult, FrameworkReplay, UnitMethod};
use profilednn_torchtrace::step_units::{StepUnits, Unit};
use profilednn_torchtrace::Phase;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

/// The helper, built in: the binary needs no installed `profilednn` package, only torch.
const HELPER: &str = include_str!("../../../python/profilednn/replay_ops.py");

/// How the units run.
#[derive(Debug, Clone)]
pub struct Options {
    pub python: Interpreter,
    /// `torch.set_num_threads`; `None` leaves PyTorch's default (OMP_NUM_THREADS, else the cores).
    pub threads: Option<u64>,
    /// `Some("bf16")`: autocast's lower-precision ops (GEMMs, attention, convolutions) take
    /// bf16 tensors; `None`: as recorded.
    pub precision: Option<String>,
    /// `Some("channels-last")`: 4-D floating tensors recorded contiguous (NCHW) are given in
    /// channels-last order, as `model.to(memory_format=torch.channels_last)` makes them.
    pub layout: Option<String>,
    /// `Some(N)`: the batch of the activations set to N (the helper's `BatchPlan` says which
    /// tensors carry it).
    pub batch: Option<u64>,
    /// Untimed runs of the whole list, then timed runs (each unit's median is kept).
    pub warmup: u32,
    pub runs: u32,
    /// Time under torch.profiler with shapes, as the trace was recorded (like with like).
    pub under_profiler: bool,
    /// Helper processes run one after the other; each unit keeps its median over them.
    pub processes: u32,
    /// oneDNN's verbose mode in the helper, as the recording had it (like with like, as
    /// `under_profiler`): `Some(timestamps)` turns executions' lines on (the helper's stdout
    /// takes them), `None` turns it off whatever the environment says. A recorded step pays
    /// for a line per primitive executed: a bf16 flash attention's ~1,500 small matmuls per
    /// step cost ~10 ms of a 135 ms GPT step on a Zen 4 (35.0 ms logged against 23.3 ms
    /// replayed without, 38.7 ms with).
    pub onednn_verbose: Option<bool>,
}

/// The environment of oneDNN's verbose mode (every generation's names), on or off.
fn verbose_env(cmd: &mut Command, verbose: Option<bool>) {
    use profilednn_verbose::env::{LEVEL, TIMESTAMP};
    for name in LEVEL {
        match verbose {
            Some(_) => cmd.env(name, "1"),
            None => cmd.env_remove(name),
        };
    }
    for name in TIMESTAMP {
        match verbose {
            Some(true) => cmd.env(name, "1"),
            _ => cmd.env_remove(name),
        };
    }
}

#[derive(Serialize)]
struct Request<'a> {
    /// The parameters' shapes (autograd's `AccumulateGrad` nodes), for the what-ifs' rules.
    parameters: Vec<Vec<u64>>,
    threads: Option<u64>,
    what_if: WhatIf<'a>,
    warmup: u32,
    runs: u32,
    profiler: bool,
    units: &'a [Unit],
}

#[derive(Serialize)]
struct WhatIf<'a> {
    precision: Option<&'a str>,
    layout: Option<&'a str>,
    batch: Option<u64>,
}

#[derive(Deserialize)]
struct Response {
    /// A what-if the helper cannot apply to this step (`--batch` without a batch to find).
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    format: String,
    #[serde(default)]
    torch: String,
    #[serde(default)]
    threads: u64,
    #[serde(default)]
    timing: String,
    #[serde(default)]
    batch: Option<[u64; 2]>,
    #[serde(default)]
    results: Vec<UnitResult>,
    /// The calls the what-if adds (autocast's casts), in the same order in every process.
    #[serde(default)]
    added: Vec<AddedCall>,
}

/// A call the what-if adds to the step (`AutocastFlow` in the helper).
#[derive(Deserialize)]
struct AddedCall {
    name: String,
    phase: Phase,
    ms: f64,
}

#[derive(Deserialize)]
struct UnitResult {
    ms: Option<f64>,
    skipped: Option<String>,
}

const FORMAT: &str = "profilednn.torch-replay.v1";

/// Replays `units` (read from `trace`) through PyTorch and gathers the figures per op name and
/// phase.
pub fn replay(
    trace: &str,
    units: &StepUnits,
    opts: &Options,
) -> Result<FrameworkReplay, TorchReplayError> {
    if units.units.is_empty() {
        return Err(TorchReplayError::NoUnits);
    }
    let request = Request {
        parameters: profilednn_torchtrace::step_params::parameter_shapes(units),
        threads: opts.threads,
        what_if: WhatIf {
            precision: opts.precision.as_deref(),
            layout: opts.layout.as_deref(),
            batch: opts.batch,
        },
        warmup: opts.warmup,
        runs: opts.runs.max(1),
        profiler: opts.under_profiler,
        units: &units.units,
    };
    // Several helper processes, one after the other, and each unit's median over them: on a
    // 2-vCPU VM a whole process ran 20 % slower than the next (every op alike), which the runs
    // inside one process cannot show.
    let mut responses = Vec::new();
    for _ in 0..opts.processes.max(1) {
        let response = run_helper(&opts.python, opts.onednn_verbose, &request)?;
        if let Some(e) = response.error {
            return Err(TorchReplayError::Refused(e));
        }
        if response.format != FORMAT || response.results.len() != units.units.len() {
            return Err(TorchReplayError::Output(format!(
                "{} results of format {:?} for {} units",
                response.results.len(),
                response.format,
                units.units.len()
            )));
        }
        if let Some(first) = responses.first() {
            let first: &Response = first;
            if first.added.len() != response.added.len() {
                return Err(TorchReplayError::Output(format!(
                    "helper process {} added {} calls to the step, the first {}: the same \
                     request must add the same casts",
                    responses.len() + 1,
                    response.added.len(),
                    first.added.len()
                )));
            }
        }
        responses.push(response);
    }
    let results = median_over(&responses);
    let added = added_over(&responses);
    let response = responses.swap_remove(0);
    Ok(FrameworkReplay {
        trace: trace.to_string(),
        iteration: units.iteration.index,
        iterations: units.iteration.iterations,
        logged_step_ms: units.iteration.wall_ms,
        outside_units_ms: units.outside_units_ms(),
        python: opts.python.path.display().to_string(),
        torch: response.torch,
        threads: response.threads,
        precision: opts.precision.clone(),
        layout: opts.layout.clone(),
        batch: response.batch,
        under_profiler: opts.under_profiler,
        timing: response.timing,
        processes: opts.processes.max(1),
        onednn_verbose: opts.onednn_verbose.is_some(),
        ops: gather(&units.units, &results, &added),
    })
}

fn run_helper(
    python: &Interpreter,
    verbose: Option<bool>,
    request: &Request,
) -> Result<Response, TorchReplayError> {
    let mut cmd = Command::new(&python.path);
    verbose_env(&mut cmd, verbose);
    let mut child = cmd
        .args(["-c", HELPER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| TorchReplayError::Spawn {
            python: python.path.clone(),
            error,
        })?;
    let body = serde_json::to_vec(request).map_err(|e| TorchReplayError::Output(e.to_string()))?;
    // The request kept for a run by hand (`python -m profilednn.replay_ops < FILE`): what the
    // helper was given, to check its reading of the step (the bf16 what-if's casts) or a skip.
    if let Some(path) = std::env::var_os("PROFILEDNN_TORCH_REQUEST").filter(|p| !p.is_empty()) {
        std::fs::write(&path, &body).map_err(|e| {
            TorchReplayError::Output(format!(
                "PROFILEDNN_TORCH_REQUEST: cannot write {}: {e}",
                std::path::Path::new(&path).display()
            ))
        })?;
    }
    // Written from a thread: the helper may fill its stdout pipe before reading all of stdin.
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child
        .wait_with_output()
        .map_err(|error| TorchReplayError::Spawn {
            python: python.path.clone(),
            error,
        })?;
    let _ = writer.join();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stderr.contains("No module named 'torch'") {
            return Err(TorchReplayError::NoTorch {
                python: python.path.clone(),
            });
        }
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        return Err(TorchReplayError::Failed {
            python: python.path.clone(),
            status: out.status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    // The document is the last line: anything a library printed before it is not ours.
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    serde_json::from_str(last).map_err(|e| TorchReplayError::Output(e.to_string()))
}

/// Each unit's median time over the helper processes (a unit skipped in any is skipped).
fn median_over(responses: &[Response]) -> Vec<UnitResult> {
    (0..responses[0].results.len())
        .map(|k| {
            let mut ms: Vec<f64> = responses.iter().filter_map(|r| r.results[k].ms).collect();
            if ms.len() < responses.len() {
                let skipped = responses
                    .iter()
                    .find_map(|r| r.results[k].skipped.clone())
                    .or_else(|| Some("failed in one of the helper processes".into()));
                return UnitResult { ms: None, skipped };
            }
            ms.sort_by(f64::total_cmp);
            UnitResult {
                ms: Some(ms[ms.len() / 2]),
                skipped: None,
            }
        })
        .collect()
}

/// Each added call with its median time over the helper processes.
fn added_over(responses: &[Response]) -> Vec<(String, Phase, f64)> {
    (0..responses[0].added.len())
        .map(|k| {
            let mut ms: Vec<f64> = responses.iter().map(|r| r.added[k].ms).collect();
            ms.sort_by(f64::total_cmp);
            let a = &responses[0].added[k];
            (a.name.clone(), a.phase, ms[ms.len() / 2])
        })
        .collect()
}

/// One row per (op name, phase, method), most logged time first; the added calls in rows of
/// their own (`UnitMethod::Added`, family `elementwise`: they are casts).
fn gather(
    units: &[Unit],
    results: &[UnitResult],
    added: &[(String, Phase, f64)],
) -> Vec<FrameworkOpResult> {
    let mut rows: BTreeMap<(String, String, UnitMethod), FrameworkOpResult> = BTreeMap::new();
    for (name, phase, ms) in added {
        let row = rows
            .entry((name.clone(), phase.to_string(), UnitMethod::Added))
            .or_insert_with(|| FrameworkOpResult {
                name: name.clone(),
                phase: *phase,
                family: Some("elementwise".into()),
                method: UnitMethod::Added,
                calls: 0,
                logged_ms: 0.0,
                replayed_ms: 0.0,
                skipped: None,
                low_precision: true,
            });
        row.calls += 1;
        row.replayed_ms += ms;
    }
    for (u, r) in units.iter().zip(results) {
        let method = match r.ms {
            Some(_) => UnitMethod::Torch,
            None => UnitMethod::CarriedOver,
        };
        let row = rows
            .entry((u.name.clone(), u.phase.to_string(), method))
            .or_insert_with(|| FrameworkOpResult {
                name: u.name.clone(),
                phase: u.phase,
                family: u.family.clone(),
                method,
                calls: 0,
                logged_ms: 0.0,
                replayed_ms: 0.0,
                skipped: None,
                low_precision: false,
            });
        row.low_precision |= u.autocast.is_some()
            || u.types
                .iter()
                .any(|t| matches!(t.as_str(), Some("c10::BFloat16" | "c10::Half")));
        row.calls += 1;
        row.logged_ms += u.logged_ms;
        row.replayed_ms += r.ms.unwrap_or(u.logged_ms);
        if row.skipped.is_none() {
            row.skipped = r.skipped.clone();
        }
    }
    let mut rows: Vec<FrameworkOpResult> = rows.into_values().collect();
    rows.sort_by(|a, b| {
        b.logged_ms
            .total_cmp(&a.logged_ms)
            .then(a.name.cmp(&b.name))
    });
    rows
}
