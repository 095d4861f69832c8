//! Every command that writes to stdout ends quietly with status 0 when the reader goes away
//! (`profilednn report big.log | head`): no error text, no panic, no death by SIGPIPE.

mod common;
use common::*;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};

const LOG: &str = "fixtures/corpus/onednn/v1_0_mxnet/cpu_cnn_inference_f32.level1.log";
const MACHINE: &str = "fixtures/machine/xeon-8480-spec.json";

fn command(args: &[&str]) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("profilednn"));
    c.args(args)
        .current_dir(root())
        .env("PROFILEDNN_MACHINE", "/nonexistent/profilednn-machine.json")
        .stderr(Stdio::piped());
    c
}

/// Runs with stdout a pipe whose reader is closed before the program starts: its first write
/// to stdout fails (EPIPE, or SIGPIPE if not ignored), whatever the timing.
fn with_closed_reader(args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: plain pipe(2); each descriptor is owned exactly once below.
    let (reader, writer) = unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1]))
    };
    drop(reader);
    command(args).stdout(Stdio::from(writer)).output().unwrap()
}

fn assert_quiet(args: &[&str], out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {:?} (killed by a signal when None); stderr: {stderr}",
        out.status
    );
    let lower = stderr.to_lowercase();
    for bad in ["error", "panick", "broken pipe"] {
        assert!(!lower.contains(bad), "{args:?}: stderr says {stderr}");
    }
}

fn check(args: &[&str]) {
    let out = with_closed_reader(args);
    assert_quiet(args, &out);
}

#[test]
fn report_into_a_closed_pipe() {
    check(&["report", LOG]);
    check(&["report", LOG, "--format", "json"]);
    check(&["report", LOG, "--format", "csv"]);
}

#[test]
fn diff_into_a_closed_pipe() {
    check(&["diff", LOG, "fixtures/advice/tiny_primitives.log"]);
    check(&[
        "diff",
        LOG,
        "fixtures/advice/tiny_primitives.log",
        "--format",
        "json",
    ]);
}

#[test]
fn trace_to_stdout_into_a_closed_pipe() {
    check(&["trace", LOG, "-o", "-"]);
}

/// The trace of this log is ~750 kB, more than a pipe holds: reading the first bytes and then
/// closing makes a later write fail mid-stream.
#[test]
fn trace_to_stdout_reader_closing_after_the_first_bytes() {
    let args = ["trace", LOG, "-o", "-"];
    let mut child = command(&args).stdout(Stdio::piped()).spawn().unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_quiet(&args, &out);
}

#[test]
fn advise_into_a_closed_pipe() {
    check(&["advise", LOG]);
    check(&["advise", LOG, "--format", "json"]);
}

#[test]
fn project_into_a_closed_pipe() {
    check(&["project", LOG, "--machine", MACHINE]);
    check(&["project", LOG, "--machine", MACHINE, "--json"]);
}

#[test]
fn benchdnn_ingest_into_a_closed_pipe() {
    let dir = temp_dir();
    let results = dir.join("results.txt");
    std::fs::write(
        &results,
        "perf,cpu,jit:avx512_core,,--mode=P --conv --dir=FWD_B mb2_ic64oc64_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0,0.0513802,3.1,0.5,102.76,0.55,93.4\n",
    )
    .unwrap();
    check(&["benchdnn", "--ingest", results.to_str().unwrap()]);
    std::fs::remove_dir_all(dir).ok();
}
