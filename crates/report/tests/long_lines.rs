//! Long problem descriptors: a reorder over 200 000 dimensions once took 77 s to report (the
//! terminal table's wrapping is quadratic in a cell's length). Parsing and reporting must grow
//! linearly with the line, and terminal cells are clipped (JSON keeps the full text).

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, summarize, Profile, ScanOptions, SummaryOptions};
use profilednn_report::terminal::{render, TerminalOptions, MAX_CELL_LINE};
use profilednn_verbose::LogInput;
use std::time::{Duration, Instant};

/// A oneDNN 3.2 log with one reorder over `n` dimensions of size 1, executed twice.
fn log_with_dims(n: usize) -> (tempdir::Dir, String) {
    let dims = vec!["1"; n].join("x");
    let line = format!(
        "onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd::f0 \
         dst_f32::blocked:abcd::f0,,,{dims},0.5\n"
    );
    let text = format!("onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e)\n{line}{line}");
    let dir = tempdir::Dir::new(&format!("long{n}"));
    std::fs::write(dir.path.join("log"), text).unwrap();
    (dir, dims)
}

mod tempdir {
    pub struct Dir {
        pub path: std::path::PathBuf,
    }
    impl Dir {
        pub fn new(tag: &str) -> Dir {
            let path = std::env::temp_dir().join(format!(
                "profilednn-long-lines-{}-{tag}",
                std::process::id()
            ));
            std::fs::create_dir_all(&path).unwrap();
            Dir { path }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Scan, summarize and render the terminal report; returns the report and the summary's
/// top problem.
fn report(dir: &tempdir::Dir) -> (String, String) {
    let path = dir.path.join("log");
    let out = scan(LogInput::open(&path).unwrap(), &ScanOptions::default());
    let p = Profile::from_scan("log", out, &ProfileOptions::default());
    let s = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
    let text = render(
        &s,
        &TerminalOptions {
            rows: 15,
            width: Some(120),
            columns: Default::default(),
        },
    );
    let problem = p.entries[0].primitive.problem.clone();
    (text, problem)
}

fn fastest(dir: &tempdir::Dir) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(report(dir));
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// Timed, so an accuracy check (`bench/accuracy.sh` runs it with `--ignored`); the clipping
/// test below is the regression guard that runs with every `cargo test`.
#[test]
#[ignore = "timed: run by bench/accuracy.sh"]
fn long_problem_descriptor_reports_in_linear_time() {
    let small = log_with_dims(20_000);
    let large = log_with_dims(200_000);
    let _warm = report(&small.0);
    let (t_small, t_large) = (fastest(&small.0), fastest(&large.0));
    // Ten times the line: linear ~10x, quadratic ~100x.
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-6);
    println!("long lines: 200k dims {t_large:?}, 20k dims {t_small:?}: ratio {ratio:.1} (linear ~10, quadratic ~100; bound 20)");
    assert!(
        ratio < 20.0,
        "200k dims {t_large:?} vs 20k dims {t_small:?}: ratio {ratio:.1}"
    );
}

#[test]
fn long_problem_descriptor_is_clipped_in_terminal_tables() {
    let (dir, dims) = log_with_dims(5_000);
    let (text, problem) = report(&dir);
    // The profile keeps the whole descriptor: 5 000 ones and 4 999 separators.
    assert_eq!(problem, dims);
    assert_eq!(problem.len(), 9_999);
    let longest = text.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(longest <= 200, "longest line {longest} chars");
    // What was left out is said: 9 999 chars, 120 kept.
    let kept = MAX_CELL_LINE - 40;
    assert!(
        text.contains(&format!("… (+{} chars)", 9_999 - kept)),
        "{text}"
    );
}
