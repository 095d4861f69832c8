//! `record`'s end-of-run report has the sections `report` prints (issue 41): the roofline with
//! the machine profile, and the advice. Before, it stopped after the tables.

mod common;
use common::{bin, root, temp_dir};

#[test]
fn the_end_of_run_report_has_the_roofline_and_the_advice() {
    let dir = temp_dir();
    let fixture = root().join("fixtures/advice/tiny_primitives.log");
    let machine = dir.join("m.json");
    std::fs::write(
        &machine,
        r#"{"name":"test box","threads":2,"peak_gflops":{"f32":100},"memory_gbps":20}"#,
    )
    .unwrap();
    let log = dir.join("run.log");
    let out = bin()
        .env("PROFILEDNN_MACHINE", &machine)
        .args(["record", "-o", log.to_str().unwrap(), "--", "cat"])
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let missing: Vec<&str> = [
        "Total oneDNN time",
        "Roofline efficiency on test box",
        "[tiny-primitives]",
        "(`profilednn advise LOG` shows the evidence of each finding.)",
    ]
    .into_iter()
    .filter(|w| !err.contains(w))
    .collect();
    assert!(missing.is_empty(), "missing {missing:?} in\n{err}");
    // Nothing of the report on stdout, which is the program's.
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains("Total oneDNN time"), "{shown}");
}

/// A machine profile that cannot be read fails the end-of-run report, not the recording: the
/// log is kept and the program's exit status stays the command's.
#[test]
fn a_broken_machine_profile_keeps_the_log_and_the_exit_status() {
    let dir = temp_dir();
    let machine = dir.join("broken.json");
    std::fs::write(&machine, "{ not json").unwrap();
    let log = dir.join("run.log");
    let fixture = root().join("fixtures/advice/tiny_primitives.log");
    let out = bin()
        .env("PROFILEDNN_MACHINE", &machine)
        .args(["record", "-o", log.to_str().unwrap(), "--", "sh", "-c"])
        .arg(format!("cat '{}'; exit 3", fixture.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the log is written, but its report failed"),
        "{err}"
    );
    assert!(log.exists());
}
