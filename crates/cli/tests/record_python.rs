//! `record --torch -- /path/to/python …` keeps the interpreter in the log (issue 51 item 16),
//! and reads back as the interpreter the whole-step replay runs.

mod common;
use common::{bin, temp_dir};
use profilednn_torchtrace::recorded_python;

#[test]
fn the_recorded_interpreter_round_trips_through_the_log() {
    let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
    else {
        println!("SKIPPED: no python3 in /usr/bin or /usr/local/bin");
        return;
    };
    let dir = temp_dir();
    let record = |torch: bool, log: &std::path::Path| {
        let mut c = bin();
        c.arg("record");
        if torch {
            c.arg("--torch");
        }
        c.args(["--no-report", "-o", log.to_str().unwrap(), "--"])
            .arg(&python)
            .args(["-c", "print('step')"]);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        recorded_python::of_log(log)
    };
    assert_eq!(record(true, &dir.join("run.log.gz")), Some(python.clone()));
    // Without --torch nothing is kept.
    assert_eq!(record(false, &dir.join("plain.log")), None);
}

/// `plan --torch-trace` and `advise --project --torch-trace` replay the whole step through the
/// interpreter the log names, as `replay` does: a stand-in interpreter that notes its call and
/// fails shows which one ran (issue 51 item 16; before, both ran `python3` from the PATH).
#[test]
fn plan_and_advise_replay_through_the_recorded_interpreter() {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir();
    let called = dir.join("called");
    let python = dir.join("python-of-the-run");
    std::fs::write(
        &python,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 3\n", called.display()),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fixture = |f: &str| common::root().join("fixtures/torch").join(f);
    let mut log = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(fixture("gpt-f32.log.gz")).unwrap()),
        &mut log,
    )
    .unwrap();
    let log_path = dir.join("gpt.log");
    let mut f = std::fs::File::create(&log_path).unwrap();
    writeln!(f, "{}", recorded_python::line(&python)).unwrap();
    f.write_all(&log).unwrap();
    drop(f);
    let trace = fixture("gpt-f32.trace.json.gz");
    let run = |args: &[&str]| {
        let mut c = bin();
        c.args(args)
            .env_remove("PROFILEDNN_TORCH_PYTHON")
            .env_remove("PROFILEDNN_RUNNING_PYTHON");
        c.output().unwrap()
    };
    let (l, t) = (log_path.to_str().unwrap(), trace.to_str().unwrap());
    let plan = run(&["plan", l, "--cores", "2", "--torch-trace", t]);
    let calls = std::fs::read_to_string(&called).unwrap_or_default();
    assert!(
        !calls.is_empty(),
        "plan did not run the recorded interpreter: {}",
        String::from_utf8_lossy(&plan.stderr)
    );
    std::fs::remove_file(&called).unwrap();
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let advise = run(&[
        "advise",
        l,
        "--torch-trace",
        t,
        "--project",
        "--dnnl-lib",
        &lib,
    ]);
    let calls = std::fs::read_to_string(&called).unwrap_or_default();
    assert!(
        !calls.is_empty(),
        "advise --project did not run the recorded interpreter: {}",
        String::from_utf8_lossy(&advise.stderr)
    );
}
