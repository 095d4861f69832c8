//! Our benchdnn lines against oneDNN's `verbose_converter -g benchdnn` outputs for the corpus
//! logs (`fixtures/corpus/onednn/*/*.vc_benchdnn.txt`): the set of distinct lines must be equal.
//!
//! Accepted differences (each checked to be the only kind of difference):
//! * `pooling_v2` / `softmax_v2` (oneDNN 2.x): the converter skips them ("Missing converter");
//!   we export them with the `pool` / `softmax` drivers that run them today.

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{scan, Profile, ScanOptions};
use profilednn_benchdnn::line;
use profilednn_verbose::LogInput;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/corpus/onednn")
}

fn our_lines(log: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let out = scan(LogInput::open(log).unwrap(), &ScanOptions::default());
    let p = Profile::from_scan("log", out, &ProfileOptions::default());
    let mut lines = BTreeSet::new();
    let mut extra_ok = BTreeSet::new();
    for e in &p.entries {
        if let Some((drv, text)) = line(&e.primitive) {
            let l = format!("--{drv} {text}");
            if matches!(e.primitive.kind.as_str(), "pooling_v2" | "softmax_v2") {
                extra_ok.insert(l.clone());
            }
            lines.insert(l);
        }
    }
    (lines, extra_ok)
}

/// Every `STEM.vc_benchdnn.txt` of `dir` against our lines for `STEM.log[.gz]`: the number of
/// reference lines compared, and a report per file that differs.
fn compare_dir(dir: &Path) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut failures = Vec::new();
    let Ok(files) = std::fs::read_dir(dir) else {
        return (0, failures);
    };
    for f in files {
        let f = f.unwrap().path();
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".vc_benchdnn.txt") else {
            continue;
        };
        let log = [".log", ".log.gz"]
            .iter()
            .map(|ext| dir.join(format!("{stem}{ext}")))
            .find(|p| p.exists())
            .unwrap();
        let reference: BTreeSet<String> = std::fs::read_to_string(&f)
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect();
        let (ours, extra_ok) = our_lines(&log);
        let missing: Vec<_> = reference.difference(&ours).collect();
        let extra: Vec<_> = ours
            .difference(&reference)
            .filter(|l| !extra_ok.contains(*l))
            .collect();
        checked += reference.len();
        if !missing.is_empty() || !extra.is_empty() {
            failures.push(format!(
                "{}:\n  missing (converter has, we do not):\n    {}\n  extra (we have, converter does not):\n    {}",
                f.display(),
                missing.iter().take(5).map(|s| s.as_str()).collect::<Vec<_>>().join("\n    "),
                extra.iter().take(5).map(|s| s.as_str()).collect::<Vec<_>>().join("\n    ")
            ));
        }
    }
    (checked, failures)
}

#[test]
fn benchdnn_lines_equal_the_converters() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for dir in std::fs::read_dir(corpus()).unwrap() {
        let (n, f) = compare_dir(&dir.unwrap().path());
        checked += n;
        failures.extend(f);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 400, "only {checked} reference lines found");
    eprintln!("{checked} distinct benchdnn lines equal to verbose_converter's");
}

/// What no corpus log has: quantization attributes and binary post-ops (`quantized`: grouped
/// scales and zero-points `wei:3:bf16:32x1`, per-channel masks, binary post-ops with and without
/// a tag or strides) and deconvolution (`deconvolution`: PyTorch's ConvTranspose2d, forward and
/// backward, grouped). The references were produced by oneDNN's converter itself, at the corpus'
/// commit (see each directory's README.md), never by this code.
#[test]
fn quantized_fused_and_deconvolution_lines_equal_the_converters() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/benchdnn");
    for (dir, least) in [("quantized", 7), ("deconvolution", 6)] {
        let (checked, failures) = compare_dir(&data.join(dir));
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(
            checked >= least,
            "{dir}: only {checked} reference lines found"
        );
    }
}
