//! Shared helpers of the end-to-end tests: the real binary, isolated from the user's setup.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn bin() -> Command {
    let mut c = Command::cargo_bin("profilednn").unwrap();
    // Never pick up the machine profile of whoever runs the tests.
    c.env("PROFILEDNN_MACHINE", "/nonexistent/profilednn-machine.json");
    c
}

pub fn json_of(args: &[&str]) -> Value {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A fresh directory under the system temp dir.
pub fn temp_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "profilednn-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `$PROFILEDNN_DNNL_LIB` when it names a library; else `None`, the test says SKIPPED — or
/// fails when PROFILEDNN_REQUIRE_ONEDNN is set (CI installs oneDNN: a skip there is a bug).
pub fn dnnl_lib_or_skip() -> Option<String> {
    let lib = std::env::var("PROFILEDNN_DNNL_LIB")
        .ok()
        .filter(|p| Path::new(p).exists());
    if lib.is_none() {
        assert!(
            std::env::var_os("PROFILEDNN_REQUIRE_ONEDNN").is_none(),
            "PROFILEDNN_REQUIRE_ONEDNN is set but PROFILEDNN_DNNL_LIB names no library"
        );
        eprintln!("SKIPPED: set PROFILEDNN_DNNL_LIB to a libdnnl.so.3 to run this test");
    }
    lib
}

/// `out` of a command that must have succeeded (else the test fails with its stderr).
pub fn succeeded(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The stderr of a command that must have failed.
pub fn failed(out: std::process::Output) -> String {
    assert!(
        !out.status.success(),
        "expected a failure: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}
