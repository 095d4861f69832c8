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
