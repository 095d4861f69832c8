//! One headline (issue 52 item 6): a replay with the whole step leads with the whole step, in
//! the terminal and as the JSON's `headline`; the oneDNN-only projection is a labelled part of
//! it, and the step of oneDNN plus the rest carried over, which disagreed with it, is not given.
//! Without the whole step, the training step (oneDNN projected, the rest carried over) leads.

use serde_json::Value;

mod common;
use common::{json_of, root, stdout_of, temp_dir};

fn fixture(rel: &str) -> String {
    root().join("fixtures").join(rel).display().to_string()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_whole_step_is_the_one_headline_and_onednn_a_part_of_it() {
    let log = fixture("torch/mlp-f32.log.gz");
    let replay = fixture("replay/mlp-f32.torch.replay.json");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&replay).unwrap()).unwrap();
    // The step as recorded: the replay file's steady iteration, 9.224 ms (its input, by hand).
    let recorded = f(&r["framework"]["logged_step_ms"]);
    assert_eq!(format!("{recorded:.3}"), "9.224");

    let p = json_of(&["project", &log, "--replay", &replay, "--json"]);
    let h = &p["headline"];
    assert_eq!(h["basis"], "whole_step", "{h}");
    assert_eq!(f(&h["logged_ms"]), recorded);
    assert_eq!(f(&h["projected_ms"]), f(&p["step"]["projected_step_ms"]));
    let change = f(&h["projected_ms"]) / recorded - 1.0;
    assert!((f(&h["change"]) - change).abs() < 1e-12, "{h}");
    let part = &h["of_which_onednn"];
    assert_eq!(f(&part["logged_ms"]), f(&p["logged_onednn_ms"]));
    assert_eq!(f(&part["projected_ms"]), f(&p["projected_onednn_ms"]));

    let text = stdout_of(&["project", &log, "--replay", &replay]);
    let headline = format!(
        "{recorded:.3} → {:.3} ms ({:+.1}%)",
        f(&h["projected_ms"]),
        change * 100.0
    );
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(" → ")).collect();
    let steps: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("step") && !l.contains("of which"))
        .collect();
    assert_eq!(steps.len(), 1, "more than one step figure: {steps:?}");
    assert!(
        steps[0].starts_with("Whole step, the headline"),
        "{}",
        steps[0]
    );
    assert!(
        steps[0].ends_with(&headline),
        "{} lacks {headline}",
        steps[0]
    );
    assert!(!text.contains("training step:"), "{text}");
    let onednn = format!(
        "of which oneDNN (the log's primitives replayed alone): {:.3} → {:.3} ms",
        f(&part["logged_ms"]),
        f(&part["projected_ms"])
    );
    assert!(text.contains(&onednn), "no «{onednn}» in\n{text}");
    assert!(
        !lines.iter().any(|l| l.trim_start().starts_with("oneDNN:")),
        "{text}"
    );
}

/// The same replay without its whole step (`framework` removed): the training step leads, the
/// sum of the oneDNN projection and the time outside oneDNN carried over, as before.
#[test]
fn without_the_whole_step_the_training_step_leads() {
    let log = fixture("torch/mlp-f32.log.gz");
    let mut r: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("replay/mlp-f32.torch.replay.json")).unwrap(),
    )
    .unwrap();
    r.as_object_mut().unwrap().remove("framework");
    let replay = temp_dir().join("onednn-only.replay.json");
    std::fs::write(&replay, r.to_string()).unwrap();
    let replay = replay.display().to_string();
    let p = json_of(&["project", &log, "--replay", &replay, "--json"]);
    let h = &p["headline"];
    assert_eq!(h["basis"], "training_step", "{h}");
    let residual = f(&p["residual_ms"]);
    assert!((f(&h["logged_ms"]) - (f(&p["logged_onednn_ms"]) + residual)).abs() < 1e-9);
    assert!((f(&h["projected_ms"]) - (f(&p["projected_onednn_ms"]) + residual)).abs() < 1e-9);
    assert!(h["of_which_onednn"].is_object(), "{h}");
    let text = stdout_of(&["project", &log, "--replay", &replay]);
    assert!(
        text.contains("  oneDNN: ") && text.contains("training step:"),
        "{text}"
    );
    assert!(!text.contains("Whole step"), "{text}");
}

/// The advice leads with the whole step too (`advise`/`report --replay R.json` of a replay with
/// the whole step): one headline per what-if, the whole step `project` heads with, and the
/// oneDNN-only figure a labelled part under it — before, the advice's list gave the oneDNN
/// figure alone (1.68× faster) as the what-if's, where the step moved 4 %.
#[test]
fn the_advice_leads_with_the_whole_step_of_a_replay_file() {
    let log = fixture("torch/mlp-f32.log.gz");
    let replay = fixture("replay/mlp-f32.torch.replay.json");
    let p = json_of(&["project", &log, "--replay", &replay, "--json"]);
    let (h, part) = (&p["headline"], &p["headline"]["of_which_onednn"]);
    let a = json_of(&["advise", &log, "--replay", &replay, "--format", "json"]);
    let steps = a["step_projections"].as_array().expect("step_projections");
    assert_eq!(steps.len(), 1, "{a}");
    let w = &steps[0];
    // One file, as recorded: set against the recorded step, as `project`'s headline is.
    assert_eq!(w["baseline"], "recorded");
    assert_eq!(f(&w["baseline_step_ms"]), f(&h["logged_ms"]));
    assert_eq!(f(&w["projected_step_ms"]), f(&h["projected_ms"]));
    assert_eq!(w["transform"], a["projections"][0]["transform"]);

    for text in [
        stdout_of(&["advise", &log, "--replay", &replay]),
        stdout_of(&["report", &log, "--replay", &replay]),
    ] {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| {
                l.trim_start()
                    .starts_with("Whole step `none (as logged)`, the headline")
            })
            .unwrap_or_else(|| panic!("no whole-step headline in\n{text}"));
        let (logged, projected) = (f(&h["logged_ms"]), f(&h["projected_ms"]));
        let headline = format!(
            "{logged:.3} → {projected:.3} ms per iteration ({:.2}× faster, against the recorded step)",
            logged / projected
        );
        assert!(
            lines[at].ends_with(&headline),
            "{} lacks {headline}",
            lines[at]
        );
        let onednn = format!(
            "{:.3} → {:.3} ms per iteration",
            f(&part["logged_ms"]),
            f(&part["projected_ms"])
        );
        assert!(
            lines[at + 1].trim_start().starts_with("of which oneDNN")
                && lines[at + 1].contains(&onednn),
            "{}",
            lines[at + 1]
        );
        // No second line for the same what-if.
        assert_eq!(text.matches("`none (as logged)`").count(), 1, "{text}");
    }
}

/// The projection names the log's oneDNN and the replay's, and the gap it assumed where their
/// versions differ (issue 52 item 3): the fixture's log is PyTorch's 3.13.3, its replay pip's
/// 3.2.0; the same replay said to come from 3.13.2 has no gap.
#[test]
fn the_projection_states_the_onednn_version_gap_it_assumed() {
    let log = fixture("torch/mlp-f32.log.gz");
    let replay = fixture("replay/mlp-f32.torch.replay.json");
    let p = json_of(&["project", &log, "--replay", &replay, "--json"]);
    let g = &p["version_gap"];
    assert_eq!(
        (g["recorded_onednn"].as_str(), g["replayed_onednn"].as_str()),
        (Some("3.13"), Some("3.2")),
        "{g}"
    );
    assert_eq!(f(&g["assumed_change"]), 0.0);
    let text = stdout_of(&["project", &log, "--replay", &replay]);
    assert!(
        text.contains("oneDNN versions differ (recorded 3.13, replayed 3.2): gap assumed +0 %"),
        "{text}"
    );
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(&replay).unwrap()).unwrap();
    r["onednn"] = "3.13.2 (c852e73ef73b861f95d3b96fbe7518b330bc24d5)".into();
    let same = temp_dir().join("same-version.replay.json");
    std::fs::write(&same, r.to_string()).unwrap();
    let p = json_of(&[
        "project",
        &log,
        "--replay",
        same.to_str().unwrap(),
        "--json",
    ]);
    assert!(p.get("version_gap").is_none(), "{}", p["version_gap"]);
}
