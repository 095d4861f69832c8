//! End-to-end: `profilednn advise` and the advice section of `report`.

mod common;
use common::{bin, json_of, root};

#[test]
fn advise_json_lists_findings_with_ids_evidence_gain_and_action() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let a = json_of(&["advise", log.to_str().unwrap(), "--format", "json"]);
    assert_eq!(a["schema"], "profilednn.advice.v1");
    let findings = a["findings"].as_array().unwrap();
    let ids: Vec<&str> = findings.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert!(
        ids.contains(&"reorder-overhead") && ids.contains(&"f32-on-bf16-hardware"),
        "{ids:?}"
    );
    for f in findings {
        assert!(f["evidence"].is_object() && f["action"].as_str().unwrap().len() > 20);
        assert!(f["gain_ms"].is_number() || f["gain_ms"].is_null());
    }
    assert_eq!(a["rules"].as_array().unwrap().len(), 14);
    // A threshold is an option: raising it silences the rule.
    let quiet = json_of(&[
        "advise",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--reorder-share",
        "0.9",
    ]);
    assert!(!quiet["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == "reorder-overhead"));
}

#[test]
fn report_ends_with_the_findings() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let out = bin()
        .args(["report", log.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[reorder-overhead]"), "{text}");
    let j = json_of(&["report", log.to_str().unwrap(), "--format", "json"]);
    assert!(j["advice"]["findings"].as_array().unwrap().len() >= 2);
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--no-advice",
    ]);
    assert!(j.get("advice").is_none());
}

#[test]
fn report_and_advise_with_a_pytorch_trace() {
    let log = root().join("fixtures/torch/reference.log.gz");
    let trace = root().join("fixtures/torch/reference.trace.json.gz");
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--torch-trace",
        trace.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(j["torch"]["unattributed_calls"], 0);
    assert_eq!(j["torch"]["iterations"], 4);
    // The trailing marker printed by the last `step()` opens no iteration in the report either.
    assert_eq!(j["iterations"]["count"], 4);
    let ids: Vec<String> = j["advice"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        ids.iter().any(|i| i == "loss-as-elementwise-ops"),
        "{ids:?}"
    );
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--torch-trace",
            trace.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PyTorch view (per iteration)") && text.contains("aten::conv2d"),
        "{text}"
    );
    // The trace goes with one log only.
    let other = root().join("fixtures/torch/fused.log.gz");
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            other.to_str().unwrap(),
            "--torch-trace",
            trace.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
