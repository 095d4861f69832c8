//! A labelled multi-rank log read while it streams ([`scan_ranks`]) gives each rank exactly the
//! profile of that rank's lines read as a log of their own, whatever the chunking and the
//! number of workers. The references here are the ranks' lines cut out of the log by their
//! literal label (`strip_prefix`), not by the demultiplexer under test, and read through the
//! ordinary single-log scan.

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::ranks::scan::scan_ranks;
use profilednn_analysis::ranks::{iteration_times, iteration_times_of_tally};
use profilednn_analysis::{scan, Profile, ScanOptions, ScanOutput, Tally};
use profilednn_verbose::launcher::Launcher;
use profilednn_verbose::LogInput;
use std::io::Read;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn gunzip(rel: &str) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(root().join(rel)).unwrap())
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn stream(bytes: Vec<u8>) -> LogInput {
    LogInput::Stream {
        path: "x.log".into(),
        reader: Box::new(std::io::Cursor::new(bytes)),
        compressed_len: None,
    }
}

fn opts(threads: usize, chunk_size: usize) -> ScanOptions {
    ScanOptions {
        threads,
        chunk_size,
        progress: None,
    }
}

/// The lines of `log` that start with `label`, the label removed (the last line keeps a missing
/// newline).
fn lines_of(log: &[u8], label: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for line in log.split_inclusive(|&c| c == b'\n') {
        if let Some(t) = line.strip_prefix(label.as_bytes()) {
            out.extend_from_slice(t);
        }
    }
    out
}

/// Everything a report takes from a profile, in a comparable form.
fn digest(p: &Profile) -> String {
    let entries: Vec<String> = p
        .entries
        .iter()
        .map(|e| {
            format!(
                "{} {:?} {} {} {} {} {} line {} {:?}",
                e.event.label(),
                e.primitive,
                e.calls,
                e.untimed_calls,
                e.time_ps,
                e.min_ps,
                e.max_ps,
                e.first_line,
                e.durations.quantile_ps(0.5),
            )
        })
        .collect();
    format!(
        "bytes {}\nlines {:?}\nmalformed {:?}\ndiagnostics {:?}\nmetadata {:?}\niterations {:?}\ntimestamps {:?}\n{}",
        p.bytes,
        p.lines,
        p.malformed
            .iter()
            .map(|m| (m.line, m.count, &m.expected))
            .collect::<Vec<_>>(),
        p.diagnostics,
        p.metadata,
        p.iterations,
        p.timestamps,
        entries.join("\n")
    )
}

fn profile_of(t: Tally) -> Profile {
    Profile::from_scan(
        "x",
        ScanOutput {
            tally: t,
            read_error: None,
        },
        &ProfileOptions::default(),
    )
}

/// Checks every rank of `log` against its lines read alone, for several chunkings and worker
/// counts; returns how many ranks there were.
fn check(log: &[u8], label: impl Fn(u32) -> String) -> usize {
    let mut seen = None;
    for (threads, chunk) in [(1, 8 << 20), (2, 4096), (3, 1000), (1, 700)] {
        let out = scan_ranks(
            stream(log.to_vec()),
            Launcher::Torchrun,
            &opts(threads, chunk),
        );
        assert!(out.read_error.is_none());
        let n = out.ranks.len();
        for r in out.ranks {
            let alone = lines_of(log, &label(r.rank));
            let reference = scan(stream(alone.clone()), &opts(1, 8 << 20));
            let expected = profile_of(reference.tally);
            assert_eq!(
                iteration_times_of_tally(&r.tally),
                iteration_times(&alone),
                "rank {} ({threads} workers, chunks of {chunk})",
                r.rank
            );
            let got = profile_of(r.tally);
            assert_eq!(
                digest(&got),
                digest(&expected),
                "rank {} ({threads} workers, chunks of {chunk})",
                r.rank
            );
        }
        assert_eq!(*seen.get_or_insert(n), n);
    }
    seen.unwrap_or(0)
}

#[test]
fn a_real_torchrun_log_splits_into_each_ranks_own_profile() {
    // torchrun 2.15 --tee 3, 2 ranks with timestamps and iteration markers.
    let log = gunzip("fixtures/multirank/torchrun_2ranks.log.gz");
    assert_eq!(check(&log, |r| format!("[default{r}]:")), 2);
}

/// A 3-rank labelled log made from the bundled RetinaNet log: the ranks' lines interleaved one
/// by one, each rank's times scaled and timestamped, with application output, launcher lines,
/// a verbose line without a label, a broken verbose line in rank 1 and a cut last line.
fn synthetic() -> Vec<u8> {
    let one = gunzip("examples/retinanet_rnx50_fp32.log.gz");
    let lines: Vec<&[u8]> = one
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = Vec::new();
    let mut clock = [1000.0f64, 1000.5, 1001.0];
    for (i, l) in lines.iter().enumerate() {
        for (r, c) in clock.iter_mut().enumerate() {
            out.extend_from_slice(format!("[rank{r}]:").as_bytes());
            let text = std::str::from_utf8(l).unwrap();
            match text.strip_prefix("onednn_verbose,v1,primitive,exec,") {
                Some(rest) => {
                    let (head, t) = rest.rsplit_once(',').unwrap();
                    let t: f64 = t.parse::<f64>().unwrap() * (1.0 + r as f64 * 0.25);
                    out.extend_from_slice(
                        format!("onednn_verbose,v1,{c:.3},primitive,exec,{head},{t}\n").as_bytes(),
                    );
                    *c += t + 0.01;
                }
                None => {
                    out.extend_from_slice(l);
                    out.push(b'\n');
                }
            }
        }
        if i == 100 {
            out.extend_from_slice(b"W1203 torchrun: sending SIGTERM\n");
            out.extend_from_slice(b"onednn_verbose,v1,primitive,exec,cpu,eltwise,jit,forward_training,data:f32::blocked:a::f0,,alg:eltwise_relu,8,0.5\n");
            out.extend_from_slice(b"[rank1]:onednn_verbose,v1,primitive,exec,cpu,convolution\n");
            out.extend_from_slice(b"[rank2]:loss 0.25\n");
        }
    }
    out.extend_from_slice(b"[rank2]:onednn_verbose,v1,primitive,exec,cpu,eltw");
    out
}

#[test]
fn a_labelled_log_splits_into_each_ranks_own_profile_whatever_the_chunks() {
    let log = synthetic();
    assert_eq!(check(&log, |r| format!("[rank{r}]:")), 3);
    // The unlabelled lines are their own profile: one verbose line, no rank's.
    let out = scan_ranks(stream(log.clone()), Launcher::Torchrun, &opts(2, 4096));
    assert_eq!(out.unlabelled_profile_lines, 1);
    assert_eq!(profile_of(out.unlabelled).lines.exec, 1);
    // Hand-derived: rank 1's broken line is malformed in rank 1 only; rank 2's cut last line
    // is a truncated line in rank 2 only.
    let p: Vec<Profile> = out.ranks.into_iter().map(|r| profile_of(r.tally)).collect();
    assert_eq!(
        p.iter().map(|p| p.lines.malformed).collect::<Vec<_>>(),
        [0, 1, 0]
    );
    assert_eq!(
        p.iter()
            .map(|p| p.lines.skipped.get("truncated_last_line").copied())
            .collect::<Vec<_>>(),
        [None, None, Some(1)]
    );
    // Each rank's exec time is the RetinaNet log's, scaled by 1, 1.25, 1.5.
    let base = p[0].exec_time_ms();
    assert!(base > 14_000.0, "{base}");
    for (r, q) in p.iter().enumerate() {
        let want = base * (1.0 + r as f64 * 0.25);
        assert!((q.exec_time_ms() - want).abs() < 1e-6 * want, "rank {r}");
    }
}

#[test]
fn a_mapped_file_and_a_stream_give_the_same_ranks() {
    let log = synthetic();
    let dir = std::env::temp_dir().join(format!("rank_scan_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ranks.log");
    std::fs::write(&path, &log).unwrap();
    let mapped = LogInput::open(&path).unwrap();
    assert!(matches!(mapped, LogInput::Mapped { .. }));
    let a = scan_ranks(mapped, Launcher::Torchrun, &opts(2, 5000));
    let b = scan_ranks(stream(log), Launcher::Torchrun, &opts(1, 8 << 20));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(a.ranks.len(), b.ranks.len());
    for (x, y) in a.ranks.into_iter().zip(b.ranks) {
        assert_eq!(x.rank, y.rank);
        assert_eq!(digest(&profile_of(x.tally)), digest(&profile_of(y.tally)));
    }
}
