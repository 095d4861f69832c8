//! Newer oneDNN verbose forms (fixtures/forms, see its README) read with exact counts, the
//! figures summed by hand from the fixtures' lines.

use std::process::Command;

fn report(rel: &str) -> serde_json::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/forms")
        .join(rel);
    let out = Command::new(assert_cmd::cargo::cargo_bin("profilednn"))
        .args(["report", path.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_pipe_inside_an_implementation_name_is_one_implementation() {
    let r = report("zen_pipe_impl.log");
    assert_eq!(r["calls"], 2);
    assert!((r["total_time_ms"].as_f64().unwrap() - 1.2).abs() < 1e-9);
    assert_eq!(r["malformed"].as_array().unwrap().len(), 0);
    let rows = r["breakdowns"]["impl"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["impl"], "zen:matmul:f32|bf16:amd");
    assert_eq!(rows[0]["calls"], 2);
}

#[test]
fn create_nested_before_the_header_is_a_diagnostic_and_the_header_still_counts() {
    let r = report("create_nested_before_header.log");
    assert_eq!(r["calls"], 1);
    assert_eq!(r["create_calls"], 1);
    assert!((r["create_time_ms"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    assert_eq!(r["diagnostics"]["debug"], 1);
    assert_eq!(r["metadata"]["isa"], serde_json::json!(["Intel AVX2"]));
    assert_eq!(r["malformed"].as_array().unwrap().len(), 0);
}
