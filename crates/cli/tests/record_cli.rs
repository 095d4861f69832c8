//! End-to-end: `profilednn record` on a program that mixes its own output with verbose lines.

mod common;
use common::{bin, root, temp_dir};
use std::process::Stdio;

/// A stand-in training program: application output, verbose lines (from a fixture), a verbose
/// line glued to output without a newline, and a non-zero exit.
fn program(log: &str) -> String {
    format!(
        "echo 'epoch 1 start'; cat '{log}'; printf 'loss=0.25'; echo 'onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,8x8,0.01'; echo 'epoch 1 done'; exit 3"
    )
}

#[test]
fn output_passes_through_and_only_verbose_lines_are_logged() {
    let fixture = root().join("fixtures/advice/tiny_primitives.log");
    let dir = temp_dir();
    let log = dir.join("run.log");
    let out = bin()
        .args(["record", "-o", log.to_str().unwrap(), "--", "sh", "-c"])
        .arg(program(fixture.to_str().unwrap()))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "the child's exit status is kept"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "epoch 1 start\nloss=0.25epoch 1 done\n",
        "program output untouched, verbose lines removed"
    );
    let written = std::fs::read_to_string(&log).unwrap();
    let fixture_text = std::fs::read_to_string(&fixture).unwrap();
    let expected_verbose: Vec<&str> = fixture_text
        .lines()
        .filter(|l| l.starts_with("onednn_verbose") || l.starts_with("profilednn,iteration"))
        .collect();
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines.len(), expected_verbose.len() + 1);
    assert_eq!(&lines[..expected_verbose.len()], &expected_verbose[..]);
    assert!(lines
        .last()
        .unwrap()
        .starts_with("onednn_verbose,v1,primitive,exec,cpu,reorder"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Total oneDNN time"),
        "summary report at the end: {err}"
    );
}

#[test]
fn verbose_mode_is_switched_on_for_every_generation() {
    let dir = temp_dir();
    let log = dir.join("env.log.gz");
    let out = bin()
        .args(["record", "--level", "2", "--no-report", "-o", log.to_str().unwrap(), "--", "sh", "-c"])
        .arg("echo $ONEDNN_VERBOSE $DNNL_VERBOSE $MKLDNN_VERBOSE $ONEDNN_VERBOSE_TIMESTAMP $DNNL_VERBOSE_TIMESTAMP")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 2 2 1 1\n");
    // An empty gzip log is still a valid gzip stream.
    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b]);
}

#[test]
fn ctrl_c_reaches_the_program_once_and_the_log_is_kept() {
    let dir = temp_dir();
    let log = dir.join("int.log");
    let script = "trap 'echo interrupted; exit 130' INT; echo 'onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,8x8,0.01'; echo ready; while true; do sleep 0.05; done";
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_profilednn"));
    cmd.args([
        "record",
        "--no-report",
        "-o",
        log.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // As from a terminal: SIGINT not ignored. A test run that a non-interactive shell started
    // in the background inherits SIGINT ignored, which profilednn and the program keep (as a
    // shell's trap does) — and this test then waited forever.
    // SAFETY: signal(2) is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    // Wait until the program runs, then interrupt profilednn (as a terminal's Ctrl-C would).
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert_eq!(first, "ready\n");
    // SAFETY: a plain libc call with valid arguments (no memory is passed).
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(rest, "interrupted\n", "the program saw the interrupt once");
    assert_eq!(status.code(), Some(130));
    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(written.lines().count(), 1);
}

/// A program that cannot be started leaves no log behind (it used to leave an empty file, which
/// read later as "no oneDNN verbose line").
#[test]
fn a_program_that_does_not_start_leaves_no_log() {
    let dir = temp_dir();
    let log = dir.join("never.log");
    let out = bin()
        .args([
            "record",
            "-o",
            log.to_str().unwrap(),
            "--",
            "/nonexistent/no-such-program",
        ])
        .output()
        .unwrap();
    let err = common::failed(out);
    assert!(
        err.contains("cannot run /nonexistent/no-such-program"),
        "{err}"
    );
    assert!(!log.exists(), "an empty log was left at {}", log.display());
}

/// `record --torch` of a script that never enters `profilednn.profile()`: no trace, and the end
/// of the run says so with the lines to add (it used to say nothing).
#[test]
fn record_torch_without_a_trace_says_how_to_get_one() {
    let dir = temp_dir();
    let log = dir.join("no-trace.log");
    let out = bin()
        .args([
            "record",
            "--torch",
            "-o",
            log.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "echo hi",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no PyTorch trace was written"), "{err}");
    assert!(err.contains("with profilednn.profile() as prof:"), "{err}");
    assert!(err.contains("no-trace.trace.json.gz"), "{err}");
}
