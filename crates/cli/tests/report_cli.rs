//! End-to-end: the real `profilednn` binary on real logs and on deliberately broken ones.

use predicates::prelude::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::PathBuf;

mod common;
use common::{bin, gunzip, json_of, root};

/// Sum of the last field of `exec` lines, computed naively (independently of the parser).
fn naive_exec_total(text: &str) -> (u64, f64) {
    let mut n = 0;
    let mut t = 0.0;
    for l in text.lines() {
        if l.starts_with("onednn_verbose,") && l.contains(",exec,") {
            n += 1;
            t += l.rsplit(',').next().unwrap().parse::<f64>().unwrap();
        }
    }
    (n, t)
}

#[test]
fn readme_example_runs_and_matches_a_naive_sum() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    bin()
        .args(["report", log.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("Total oneDNN time"))
        .stdout(predicate::str::contains("By kind and propagation"))
        .stdout(predicate::str::contains("oneDNN 3.13.3"));
    let j = json_of(&["report", log.to_str().unwrap(), "--format", "json"]);
    let (n, t) = naive_exec_total(&gunzip(&log));
    assert_eq!(j["schema"], "profilednn.report.v1");
    assert_eq!(j["calls"].as_u64().unwrap(), n);
    assert_eq!(j["lines"]["exec"].as_u64().unwrap(), n);
    assert!((j["total_time_ms"].as_f64().unwrap() - t).abs() < 1e-6 * t);
    // The capture script marks 3 iterations.
    assert_eq!(j["iterations"]["count"], 3);
    assert_eq!(j["iterations"]["method"], "markers");
    let per: f64 = j["iterations"]["per_iteration_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    let before = j["iterations"]["before_first_ms"].as_f64().unwrap();
    assert!((per + before - t).abs() < 1e-6 * t);
    // Breakdowns add up to the total.
    for name in [
        "prim_kind",
        "prop_kind",
        "prim_kind,prop_kind",
        "impl",
        "dtype",
    ] {
        let rows = j["breakdowns"][name]["rows"].as_array().unwrap();
        let sum: f64 = rows.iter().map(|r| r["time_ms"].as_f64().unwrap()).sum();
        let calls: u64 = rows.iter().map(|r| r["calls"].as_u64().unwrap()).sum();
        assert!((sum - t).abs() < 1e-6 * t, "{name}");
        assert_eq!(calls, n, "{name}");
    }
}

#[test]
fn by_keys_are_json_fields_and_csv_columns() {
    let log = root().join("fixtures/corpus/onednn/v3_14_benchdnn_primitives/primitives.log");
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--by",
        "prim_kind,impl,dtype",
    ]);
    let b = &j["breakdowns"]["prim_kind,impl,dtype"];
    let rows = b["rows"].as_array().unwrap();
    assert!(rows.len() > 10);
    for r in rows {
        for k in ["prim_kind", "impl", "dtype", "calls", "time_ms"] {
            assert!(r.get(k).is_some(), "row lacks {k}: {r}");
        }
    }
    assert!(rows
        .iter()
        .any(|r| r["dtype"] == "bf16" || r["dtype"].as_str().unwrap().contains("bf16")));
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--format",
            "csv",
            "--by",
            "engine,prim_kind",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("engine,prim_kind,calls,time_ms,share_pct,mean_ms,min_ms,max_ms"));
    assert_eq!(
        lines.count(),
        rows.iter()
            .map(|r| r["prim_kind"].as_str().unwrap())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    );
}

#[test]
fn unknown_group_key_is_a_clear_error() {
    bin()
        .args([
            "report",
            "examples/retinanet_rnx50_fp32.log.gz",
            "--by",
            "colour",
        ])
        .current_dir(root())
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("unknown key 'colour'")
                .and(predicate::str::contains("prim_kind")),
        );
}

#[test]
fn missing_file_names_the_path() {
    bin()
        .args(["report", "no/such/file.log"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("no/such/file.log"));
}

const GOOD: &str = "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb16a::f0,attr-scratchpad:user,,64x3x7x7,1.5";
const GOOD2: &str = "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx512_core,forward_training,src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb2_ic3oc64_ih256oh128kh7sh2dh0ph3_iw256ow128kw7sw2dw0pw3,2.25";

/// Every kind of bad input in one file, between good lines that must all still count.
fn messy_log() -> Vec<u8> {
    let mut b = Vec::new();
    let mut line = |s: &[u8]| {
        b.extend_from_slice(s);
        b.push(b'\n');
    };
    line(b"Epoch 1/10 starting"); // 1 application output
    line(GOOD.as_bytes()); // 2
    line(format!("{GOOD2}\r").as_bytes()); // 3 CRLF: still good
    line(b""); // 4 empty
    line(b"caf\xe9 \xff\xfe not utf-8"); // 5 invalid UTF-8
    line(b"\x00\x01\x02\x03\x7f binary junk"); // 6 binary
    line(format!("loss=0.3{GOOD}").as_bytes()); // 7 torn
    line(b"onednn_verbose,v1,primitive,exec,cpu,convolution,jit"); // 8 malformed: too few fields
    line(format!("{},oops", &GOOD[..GOOD.len() - 4]).as_bytes()); // 9 malformed: time not a number
    line(GOOD.as_bytes()); // 10
    b.extend_from_slice(&GOOD.as_bytes()[..60]); // 11 truncated last line
    b
}

#[test]
fn bad_input_is_counted_by_reason_and_never_loses_good_lines() {
    let dir = tempdir();
    let path = dir.join("messy.log");
    std::fs::write(&path, messy_log()).unwrap();
    for threads in ["1", "2"] {
        let j = json_of(&[
            "report",
            path.to_str().unwrap(),
            "--format",
            "json",
            "-j",
            threads,
        ]);
        assert_eq!(j["lines"]["total"], 11);
        assert_eq!(j["calls"], 3, "the three good lines");
        assert!((j["total_time_ms"].as_f64().unwrap() - (1.5 + 2.25 + 1.5)).abs() < 1e-9);
        let sk = &j["lines"]["skipped"];
        assert_eq!(sk["foreign"], 1);
        assert_eq!(sk["empty"], 1);
        assert_eq!(sk["invalid_utf8"], 1);
        assert_eq!(sk["binary"], 1);
        assert_eq!(sk["torn"], 1);
        assert_eq!(sk["truncated_last_line"], 1);
        assert_eq!(j["lines"]["malformed"], 2);
        let m = j["malformed"].as_array().unwrap();
        assert_eq!(m[0]["line"], 8);
        assert!(
            m[0]["expected"].as_str().unwrap().contains("expected 8"),
            "{}",
            m[0]
        );
        assert_eq!(m[1]["line"], 9);
        assert!(
            m[1]["expected"]
                .as_str()
                .unwrap()
                .contains("execution time"),
            "{}",
            m[1]
        );
    }
    // The terminal report shows the malformed lines with their numbers.
    bin()
        .args(["report", path.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("line 8:").and(predicate::str::contains("line 9:")));
}

#[test]
fn truncated_gzip_reports_offset_and_what_was_read() {
    let dir = tempdir();
    let text: String = (0..50_000)
        .map(|i| format!("{}{}\n", &GOOD[..GOOD.len() - 3], i % 7 + 1))
        .collect();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let path = dir.join("cut.log.gz");
    std::fs::write(&path, &gz[..gz.len() * 2 / 3]).unwrap();
    let out = bin()
        .args(["report", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cut.log.gz") && stderr.contains("bytes of uncompressed data"),
        "{stderr}"
    );
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = j["calls"].as_u64().unwrap();
    assert!(calls > 1000 && calls < 50_000, "{calls}");
    assert_eq!(j["read_errors"].as_array().unwrap().len(), 1);
    // Only whole lines were counted: the partial one at the cut is a truncated last line.
    assert_eq!(j["lines"]["malformed"], 0);
}

#[test]
fn stdin_plain_and_gzip() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let gz = std::fs::read(&log).unwrap();
    let a = json_of(&["report", log.to_str().unwrap(), "--format", "json"]);
    // Streamed input is read by one thread and parsed by `-j` others: 1 and 2 parsers must
    // give the mapped file's figures exactly.
    for input in [gz.clone(), gunzip(&log).into_bytes()] {
        for threads in ["1", "2"] {
            let out = bin()
                .args(["report", "-", "--format", "json", "-j", threads])
                .write_stdin(input.clone())
                .output()
                .unwrap();
            assert!(out.status.success());
            let b: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(a["total_time_ms"], b["total_time_ms"]);
            assert_eq!(a["calls"], b["calls"]);
            assert_eq!(a["breakdowns"], b["breakdowns"], "-j {threads}");
        }
    }
}

#[test]
fn several_logs_side_by_side_and_merged() {
    let a = root().join("fixtures/corpus/pytorch/resnet50_fp32.log.gz");
    let b = root().join("fixtures/corpus/pytorch/resnet50_bf16_cl.log.gz");
    let ja = json_of(&["report", a.to_str().unwrap(), "--format", "json"]);
    let jb = json_of(&["report", b.to_str().unwrap(), "--format", "json"]);
    let j = json_of(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let ta = ja["total_time_ms"].as_f64().unwrap();
    let tb = jb["total_time_ms"].as_f64().unwrap();
    assert!((j["total_time_ms"].as_f64().unwrap() - ta - tb).abs() < 1e-6 * (ta + tb));
    let per = j["per_log"].as_array().unwrap();
    assert_eq!(per.len(), 2);
    assert!((per[1]["total_time_ms"].as_f64().unwrap() - tb).abs() < 1e-9 * tb);
    let row = &j["breakdowns"]["prim_kind"]["rows"][0];
    assert_eq!(row["time_ms_per_log"].as_object().unwrap().len(), 2);
    bin()
        .args(["report", a.to_str().unwrap(), b.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("side by side"));
}

fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "profilednn-test-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn per_iteration_times_match_a_naive_split_at_markers() {
    let log = root().join("examples/resnet50_bf16_cl.log.gz");
    let mut segs: Vec<f64> = Vec::new();
    for l in gunzip(&log).lines() {
        if l.starts_with("### ITER") && l.contains("BEGIN") {
            segs.push(0.0);
        } else if l.starts_with("onednn_verbose") && l.contains(",exec,") {
            if let Some(s) = segs.last_mut() {
                *s += l.rsplit(',').next().unwrap().parse::<f64>().unwrap();
            }
        }
    }
    assert_eq!(segs.len(), 3);
    for threads in ["1", "2"] {
        let j = json_of(&[
            "report",
            log.to_str().unwrap(),
            "--format",
            "json",
            "-j",
            threads,
        ]);
        let per: Vec<f64> = j["iterations"]["per_iteration_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(per.len(), 3);
        for (a, b) in per.iter().zip(&segs) {
            assert!((a - b).abs() < 1e-6 * b.max(1.0), "{per:?} vs {segs:?}");
        }
    }
}

/// Input without a single verbose line: exit status 1 and how to record a log, not empty tables.
#[test]
fn no_verbose_lines_is_an_error_that_says_how_to_record() {
    let dir = tempdir().join("no-verbose");
    std::fs::create_dir_all(&dir).unwrap();
    let binary: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    let cases: [(&str, &[u8]); 4] = [
        ("empty.log", b""),
        ("text.log", b"epoch 1 loss 0.5\nepoch 2 loss 0.4\n"),
        ("zero.log.gz", b""),
        ("binary.log", &binary),
    ];
    let check = |out: std::process::Output, what: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(out.stdout.is_empty(), "{what}: printed a report");
        assert!(
            err.contains("no oneDNN verbose line found")
                && err.contains("ONEDNN_VERBOSE=1")
                && err.contains("profilednn record"),
            "{what}: {err}"
        );
    };
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        for cmd in ["report", "advise", "trace"] {
            let mut c = bin();
            c.args([cmd, path.to_str().unwrap()]);
            if cmd == "trace" {
                c.args(["-o", dir.join("t.json").to_str().unwrap()]);
            }
            check(c.output().unwrap(), &format!("{cmd} {name}"));
        }
    }
    check(
        bin()
            .args(["report", "-"])
            .write_stdin("")
            .output()
            .unwrap(),
        "report - </dev/null",
    );
}

/// A plain folder of logs is every log in it, side by side, in name order (it used to be the
/// error "is a directory, not a log file").
#[test]
fn a_folder_of_logs_is_each_of_its_logs() {
    let dir = tempdir().join("a-folder-of-logs");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["zen_pipe_impl.log", "create_nested_before_header.log"] {
        std::fs::copy(root().join("fixtures/forms").join(f), dir.join(f)).unwrap();
    }
    let r = json_of(&["report", dir.to_str().unwrap(), "--format", "json"]);
    let sources = r["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2, "{sources:?}");
    assert!(sources[0]
        .as_str()
        .unwrap()
        .ends_with("create_nested_before_header.log"));
    assert!(sources[1].as_str().unwrap().ends_with("zen_pipe_impl.log"));
    // 2 matmuls (zen) + 1 (gemm:jit).
    assert_eq!(r["calls"], 3);
}

/// A directory, a missing log, a missing machine profile: one line each, the OS error once.
#[test]
fn errors_are_said_once() {
    let dir = tempdir().join("a-directory");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_str().unwrap();
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let stderr = |args: &[&str]| {
        let out = bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for cmd in ["report", "trace", "advise"] {
        let err = stderr(&[cmd, d]);
        assert_eq!(
            err,
            format!("profilednn: error: cannot read the log: {d} is a directory, not a log file\n"),
            "{cmd}"
        );
    }
    let err = stderr(&["report", "no/such/file.log"]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    let err = stderr(&[
        "report",
        log.to_str().unwrap(),
        "--machine",
        "/nonexistent/machine.json",
    ]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

/// Counts of 0 and shares above 1 are usage errors naming the option, not silently used.
#[test]
fn options_out_of_range_are_rejected() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let l = log.to_str().unwrap();
    let cases: [(&[&str], &str, &str); 7] = [
        (
            &["report", l, "--iterations", "0"],
            "--iterations",
            "at least 1",
        ),
        (&["report", l, "--top", "0"], "--top", "at least 1"),
        (&["advise", l, "--cores", "0"], "--cores", "at least 1"),
        (
            &["advise", l, "--iterations", "0"],
            "--iterations",
            "at least 1",
        ),
        (
            &["advise", l, "--reorder-share", "5"],
            "--reorder-share",
            "from 0 to 1",
        ),
        (
            &["advise", l, "--busy-share=-0.1"],
            "--busy-share",
            "from 0 to 1",
        ),
        (&["diff", l, l, "--top", "0"], "--top", "at least 1"),
    ];
    for (args, option, why) in cases {
        let out = bin().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(err.contains(option) && err.contains(why), "{args:?}: {err}");
    }
}

/// A gzip cut inside its third iteration: two whole iterations, the third reported as partial
/// and left out of the average (checked against a naive split of the readable lines).
#[test]
fn truncated_log_reports_its_cut_iteration_as_partial() {
    let text = gunzip(&root().join("examples/resnet50_bf16_cl.log.gz"));
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(text.as_bytes()).unwrap();
    let gz = enc.finish().unwrap();
    let cut = &gz[..gz.len() * 9 / 10];
    let path = tempdir().join("cut-iterations.log.gz");
    std::fs::write(&path, cut).unwrap();
    // What can be read: whole lines before the end of readable data.
    let mut readable = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(cut).read_to_end(&mut readable);
    let readable = String::from_utf8_lossy(&readable);
    let whole = &readable[..readable.rfind('\n').unwrap() + 1];
    let (mut segs, mut before, mut total) = (Vec::<f64>::new(), 0.0, 0.0);
    for l in whole.lines() {
        if l.starts_with("### ITER") && l.contains("BEGIN") {
            segs.push(0.0);
        } else if l.starts_with("onednn_verbose") && l.contains(",exec,") {
            let t: f64 = l.rsplit(',').next().unwrap().parse().unwrap();
            total += t;
            match segs.last_mut() {
                Some(s) => *s += t,
                None => before += t,
            }
        }
    }
    assert_eq!(segs.len(), 3, "the cut is in the third iteration");
    let out = bin()
        .args(["report", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.max(1.0);
    let it = &j["iterations"];
    assert_eq!(it["count"], 2);
    let per: Vec<f64> = it["per_iteration_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(per.len(), 2);
    assert!(
        close(per[0], segs[0]) && close(per[1], segs[1]),
        "{per:?} {segs:?}"
    );
    assert!(close(it["partial_last_ms"].as_f64().unwrap(), segs[2]));
    // The headline is the iterations' own mean: neither the partial third nor the work before
    // the first marker is averaged in (the headline was total/2 with the latter once).
    let headline = j["time_ms_per_iteration"].as_f64().unwrap();
    assert!(close(headline, (segs[0] + segs[1]) / 2.0), "{headline}");
    assert!(close(it["before_first_ms"].as_f64().unwrap(), before));
    assert!(close(before + segs.iter().sum::<f64>(), total));
    let out = bin()
        .args(["report", path.to_str().unwrap()])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("partial last iteration"), "{report}");

    // The same readable text as a plain file, cut mid-line: the same iterations, the partial
    // third left out of the average as for the gzip (it used to be averaged in).
    let plain = tempdir().join("cut-iterations.log");
    let mid_line = whole.len() + (readable.len() - whole.len()).clamp(1, 10);
    let cut_text = &readable.as_bytes()[..mid_line.min(readable.len())];
    assert_ne!(cut_text.last(), Some(&b'\n'));
    std::fs::write(&plain, cut_text).unwrap();
    let j = json_of(&["report", plain.to_str().unwrap(), "--format", "json"]);
    let it = &j["iterations"];
    assert_eq!(it["count"], 2, "{it}");
    assert!(close(it["partial_last_ms"].as_f64().unwrap(), segs[2]));
    let headline = j["time_ms_per_iteration"].as_f64().unwrap();
    assert!(close(headline, (segs[0] + segs[1]) / 2.0), "{headline}");
}

/// Work before the first marker (a warm-up step outside the loop, a compiled model's first run)
/// is in no iteration: the headline, JSON and per-rank figures average the iterations' own
/// time, and the time before is shown apart (it was averaged in: 199.6 ms headline for
/// iterations of 166 ms on a newcomer's compiled run).
#[test]
fn work_before_the_first_marker_is_not_averaged_in() {
    let exec = |ms: f64| GOOD.replace(",1.5", &format!(",{ms}"));
    let mut log = String::from("onednn_verbose,info,cpu,runtime:OpenMP,nthr:2\n");
    // 201 ms of warm-up, then iterations of 3 and 5 ms.
    log += &format!("{}\n{}\n", exec(200.0), exec(1.0));
    for (i, ms) in [3.0, 5.0].iter().enumerate() {
        log += &format!("### ITER {i} BEGIN\n{}\n{}\n", exec(ms - 1.0), exec(1.0));
    }
    let path = tempdir().join("before-first.log");
    std::fs::write(&path, &log).unwrap();
    let j = json_of(&["report", path.to_str().unwrap(), "--format", "json"]);
    assert_eq!(j["iterations"]["count"], 2);
    assert!(
        (j["time_ms_per_iteration"].as_f64().unwrap() - 4.0).abs() < 1e-9,
        "{j}"
    );
    assert!((j["iterations"]["before_first_ms"].as_f64().unwrap() - 201.0).abs() < 1e-9);
    assert!((j["total_time_ms"].as_f64().unwrap() - 209.0).abs() < 1e-9);
    let out = bin()
        .args(["report", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("4.000 ms of oneDNN time per iteration"),
        "{text}"
    );
    assert!(
        text.contains("201.0 ms of oneDNN time before the first marker"),
        "{text}"
    );
}

/// One thread, one 5 µs call: "1 thread" (not "1 threads"), and the time as 0.005 ms, not in
/// exponent notation.
#[test]
fn small_counts_are_singular_and_small_times_are_decimals() {
    let path = tempdir().join("one-call.log");
    std::fs::write(
        &path,
        format!(
            "onednn_verbose,info,cpu,runtime:OpenMP,nthr:1\n{}\n",
            &GOOD.replace(",1.5", ",0.005")
        ),
    )
    .unwrap();
    let out = bin()
        .args(["report", path.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("OpenMP, 1 thread\n"), "{text}");
    assert!(
        text.contains("Total oneDNN time: 0.005 ms in 1 call"),
        "{text}"
    );
    assert!(!text.contains("e-3"), "{text}");
}

/// Issue 18: options without help text (`-o`, `-j`, `--format`, `--no-progress`, replay's run
/// counts, project's `--json`). Every option of every command says what it does.
#[test]
fn every_option_of_every_command_has_help_text() {
    let commands = [
        "report", "benchdnn", "replay", "project", "diff", "trace", "record", "advise", "peak",
        "plan",
    ];
    let mut bare = Vec::new();
    for c in commands {
        let out = bin().args([c, "--help"]).output().unwrap();
        assert!(out.status.success(), "{c} --help");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut in_options = false;
        let lines: Vec<&str> = text.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("Options:") || l.starts_with("Arguments:") {
                in_options = true;
                continue;
            }
            if !in_options || !l.starts_with("  ") {
                continue;
            }
            let t = l.trim_start();
            if !(t.starts_with('-') || t.starts_with('<') || t.starts_with('[')) {
                continue;
            }
            // clap puts the help after the flag on the same line, or on the next, more
            // indented line; a bare flag has neither.
            let same_line = t.split("  ").filter(|s| !s.trim().is_empty()).count() > 1;
            let next_indented = lines.get(i + 1).is_some_and(|n| {
                n.len() - n.trim_start().len() > l.len() - t.len()
                    && !n.trim().is_empty()
                    && !n.trim_start().starts_with('-')
            });
            if !same_line && !next_indented {
                bare.push(format!("{c}: {t}"));
            }
        }
    }
    assert!(bare.is_empty(), "options without help: {bare:#?}");
}
