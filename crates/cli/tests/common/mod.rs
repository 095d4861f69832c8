//! Shared helpers of the end-to-end tests: the real binary, isolated from the user's setup.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file of the repository, by its path from the root, as a command argument.
pub fn repo(rel: &str) -> String {
    root().join(rel).display().to_string()
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

/// A fresh directory under the system temp dir. The directories of test processes that have
/// exited are removed on the first call: a test's directory must outlive the calls that use it
/// (paths into it are handed around), so it cannot go when a guard drops, and without this
/// every `cargo test` left ~700 directories behind (the disk filled once).
pub fn temp_dir() -> PathBuf {
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(remove_dirs_of_exited_tests);
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

/// Removes `profilednn-test-PID-*` directories whose process no longer runs (`/proc/PID` is
/// gone; where there is no /proc, nothing is removed).
fn remove_dirs_of_exited_tests() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("profilednn-test-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
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

/// Whether oneDNN has bf16 implementations at the instruction set a replay file names
/// (`onednn_isa`): from `avx512_core` (emulated) or `avx2_vnni_2`; an AVX2-only CPU (AMD EPYC
/// Zen 3, or `ONEDNN_MAX_CPU_ISA=AVX2`) has none, and its bf16 problems are not replayed.
#[allow(dead_code)]
pub fn onednn_has_bf16(replay: &serde_json::Value) -> bool {
    let isa = replay["onednn_isa"]
        .as_str()
        .expect("onednn_isa in the replay file");
    isa.starts_with("avx512_core") || isa == "avx2_vnni_2"
}

/// The text of a gzip file (several members, as `record` appends them, read as one).
pub fn gunzip(path: &Path) -> String {
    use std::io::Read;
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .read_to_string(&mut s)
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    s
}

/// `replay` options that time each problem once, isolated, without warm-up: the fastest replay,
/// for tests of what runs rather than how fast.
pub const ONE_ISOLATED_RUN: [&str; 10] = [
    "--mode",
    "isolated",
    "--warmup",
    "0",
    "--min-runs",
    "1",
    "--max-runs",
    "1",
    "--min-time-ms",
    "0",
];

/// `profilednn replay LOG --dnnl-lib LIB --no-progress -o OUT ARGS…` with the environment
/// `env` added, which must succeed (else the test fails with its output): the results file
/// read back, and the command's output.
pub fn replay_to(
    env: &[(&str, &str)],
    lib: &str,
    log: &Path,
    out: &Path,
    args: &[&str],
) -> (Value, std::process::Output) {
    let mut c = bin();
    c.envs(env.iter().copied())
        .arg("replay")
        .arg(log)
        .args(["--dnnl-lib", lib, "--no-progress", "-o"])
        .arg(out)
        .args(args);
    let o = succeeded(c.output().unwrap());
    let text = std::fs::read_to_string(out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    (serde_json::from_str(&text).unwrap(), o)
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

/// The first object of the JSON array `rows` whose `key` is `value` (panics naming it if none).
pub fn row_where<'a>(rows: &'a Value, key: &str, value: &str) -> &'a Value {
    rows.as_array()
        .unwrap_or_else(|| panic!("not an array: {rows}"))
        .iter()
        .find(|r| r[key] == value)
        .unwrap_or_else(|| panic!("no row with {key} = {value}"))
}

/// The stdout of `profilednn ARGS`, which must succeed.
pub fn stdout_of<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    String::from_utf8(succeeded(bin().args(args).output().unwrap()).stdout).unwrap()
}

/// `fixtures/whatif/f32-nchw-1t.log.gz` (a real ResNet-18 log) made to look recorded on a busy
/// machine (issue 41): two reorder calls in three 1000x slower, as a descheduled thread makes
/// them. Returns the path and how many calls were slowed.
pub fn polluted_log() -> (std::path::PathBuf, usize) {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(root().join("fixtures/whatif/f32-nchw-1t.log.gz")).unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    let (mut out, mut n, mut slowed) = (String::new(), 0, 0);
    for l in text.lines() {
        match l.rsplit_once(',') {
            Some((head, t)) if l.contains(",exec,cpu,reorder,") => {
                n += 1;
                let t: f64 = t.parse().unwrap();
                let t = if n % 3 == 0 {
                    t
                } else {
                    slowed += 1;
                    t * 1000.0
                };
                out += &format!("{head},{t}\n");
            }
            _ => out += &format!("{l}\n"),
        }
    }
    let p = temp_dir().join("polluted.log");
    std::fs::write(&p, out).unwrap();
    (p, slowed)
}
