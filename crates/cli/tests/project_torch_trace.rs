//! `project LOG --torch-trace TRACE --replay R.json` (issue 51 item 15): accepted, and the trace
//! checked against the replay file (which records the trace and the steady iteration it
//! replayed) and against the log (another run's is refused); and files of the wrong kind given
//! as `--replay` named for what they are (item 21).

mod common;
use common::{bin, root};

fn run(args: &[&str]) -> (bool, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn fixture(rel: &str) -> String {
    root()
        .join("fixtures")
        .join(rel)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_replays_own_trace_is_accepted_and_projects_as_without_it() {
    let (log, replay) = (
        fixture("torch/mlp-f32.log.gz"),
        fixture("replay/mlp-f32.torch.replay.json"),
    );
    // The replay file names the trace it was made from.
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&replay).unwrap()).unwrap();
    assert_eq!(
        r["framework"]["trace"],
        "fixtures/torch/mlp-f32.trace.json.gz"
    );
    let trace = fixture("torch/mlp-f32.trace.json.gz");
    let (ok, with, err) = run(&[
        "project",
        &log,
        "--replay",
        &replay,
        "--torch-trace",
        &trace,
    ]);
    assert!(ok, "{err}");
    let (ok, without, err) = run(&["project", &log, "--replay", &replay]);
    assert!(ok, "{err}");
    assert_eq!(with, without);
}

/// `project LOG --replay mlp's replay --torch-trace TRACE`'s error (it must fail).
fn refused(log: &str, trace: &str) -> String {
    let replay = fixture("replay/mlp-f32.torch.replay.json");
    let (ok, _, err) = run(&["project", log, "--replay", &replay, "--torch-trace", trace]);
    assert!(!ok, "{log} with {trace} accepted");
    err
}

#[test]
fn another_trace_than_the_replays_or_the_logs_is_refused() {
    let replay = fixture("replay/mlp-f32.torch.replay.json");
    let trace = fixture("torch/gpt-f32.trace.json.gz");
    // gpt's trace with its own log: of the log's run, not the replay's trace.
    let err = refused(&fixture("torch/gpt-f32.log.gz"), &trace);
    let want = format!(
        "{trace}: not the trace {replay} was replayed from (fixtures/torch/mlp-f32.trace.json.gz)"
    );
    assert!(err.contains(&want), "missing «{want}» in {err}");
    // By hand (the replay file): iteration 2 of 9.224 ms.
    assert!(err.contains("the replay's #2 of 9.224 ms"), "{err}");
    // gpt's trace with mlp's log: another run than the log's.
    let log = fixture("torch/mlp-f32.log.gz");
    let err = refused(&log, &trace);
    assert!(
        err.contains(&format!("{trace}: not the trace of {log}: ")),
        "{err}"
    );
}

#[test]
fn a_log_given_as_the_replay_is_named() {
    let log = fixture("torch/mlp-f32.log.gz");
    let (ok, _, err) = run(&["project", &log, "--replay", &log]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "{log}: this is a oneDNN verbose log: expected replay results"
        )) && err.contains("`profilednn replay LOG -o R.json`"),
        "{err}"
    );
}
