//! Figures the README quotes are what the commands print (it once quoted "1999 → 955" where
//! `diff` printed 1976.7 → 1025.0).

mod common;
use common::{bin, root};

#[test]
fn readme_case_study_diff_quotes_what_diff_prints() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let out = bin()
        .current_dir(root())
        .args([
            "diff",
            "fixtures/torch/retinanet-reference.log.gz",
            "fixtures/torch/retinanet-fused.log.gz",
            "--ignore-dtype",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // "oneDNN time: 1976.7 ms → 1025.0 ms (1.93x faster)"
    let line = text
        .lines()
        .find(|l| l.starts_with("oneDNN time: "))
        .unwrap();
    let quoted = line
        .trim_start_matches("oneDNN time: ")
        .replace(" (", " per iteration (");
    assert!(readme.contains(&quoted), "README does not quote «{quoted}»");
    // The reorder row's calls: "984 → 367".
    let reorder = text
        .lines()
        .find(|l| l.trim_start().starts_with("reorder ") && l.contains("undef"))
        .unwrap();
    let f: Vec<&str> = reorder.split_whitespace().collect();
    let calls = f[f.len() - 3..].join(" ");
    assert!(
        readme.contains(&format!("reorders {calls} calls per iteration")),
        "README does not quote reorders «{calls}»"
    );
}

/// The README leads with what the tool does and the method's three commands, keeps the two
/// commands a newcomer runs first near the top, says what the log does not show and what a busy
/// machine does to it, and every document it points to exists (issue 41: the measured detail
/// moved to `docs/measurements.md`).
#[test]
fn readme_leads_with_the_method_and_its_documents_exist() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let top: String = readme.lines().take(40).collect::<Vec<_>>().join("\n");
    for want in [
        "profile → project → optimize",
        "profilednn record -o train.log -- python train.py",
        "profilednn project train.log --replay",
        "profilednn advise train.log --project",
        "\ncargo run --release -- report examples/retinanet_rnx50_fp32.log.gz\n",
        "\ncargo test --workspace\n",
    ] {
        assert!(
            top.contains(want),
            "not in the README's first 40 lines: «{want}»"
        );
    }
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    for want in [
        "MKL/BLAS",
        "ATen",
        "compiled kernels",
        "--torch-trace",
        "timings-polluted",
    ] {
        assert!(flat.contains(want), "README does not say «{want}»");
    }
    let docs: std::collections::BTreeSet<&str> = readme
        .split('`')
        .filter(|s| s.starts_with("docs/") && s.ends_with(".md"))
        .collect();
    assert!(docs.contains("docs/measurements.md"), "{docs:?}");
    for d in docs {
        assert!(
            root().join(d).exists(),
            "README names {d}, which does not exist"
        );
    }
}
