//! Newer oneDNN verbose forms (fixtures/forms, see its README) read with exact counts, the
//! figures summed by hand from the fixtures' lines.

mod common;

fn report(rel: &str) -> serde_json::Value {
    let path = common::root().join("fixtures/forms").join(rel);
    common::json_of(&["report", path.to_str().unwrap(), "--format", "json"])
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

/// The figures of `spdlog_rotated/` by hand: 7 exec lines (0.5 + 0.25 in train.2.log, 0.5 +
/// 0.25 + 0.5 in train.1.log, 1 + 0.25 in train.log) = 3.25 ms; the header's 4 info lines are
/// in the oldest file; 3 lines of the logger's own; one warning at spdlog's `warning` level.
fn assert_rotated_set(r: &serde_json::Value) {
    assert_eq!(r["calls"], 7, "{r}");
    assert!((r["total_time_ms"].as_f64().unwrap() - 3.25).abs() < 1e-9);
    assert_eq!(r["lines"]["total"], 15);
    assert_eq!(r["lines"]["info"], 4);
    assert_eq!(r["lines"]["diagnostics"], 1);
    assert_eq!(r["lines"]["skipped"]["logger"], 3);
    assert_eq!(r["lines"]["skipped"].as_object().unwrap().len(), 1);
    assert_eq!(r["malformed"].as_array().unwrap().len(), 0);
    assert_eq!(r["metadata"]["isa"], serde_json::json!(["Intel AVX 10.1"]));
    let rows = r["breakdowns"]["impl"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["impl"], "brg_matmul:avx10_1_512");
}

#[test]
fn a_rotated_spdlog_set_given_as_its_directory_is_one_log_read_oldest_first() {
    assert_rotated_set(&report("spdlog_rotated"));
}

#[test]
fn a_rotated_spdlog_set_given_file_by_file_in_any_order_is_one_log() {
    let dir = common::root().join("fixtures/forms/spdlog_rotated");
    let arg = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let (a, b, c) = (arg("train.log"), arg("train.2.log"), arg("train.1.log"));
    let r = common::json_of(&["report", &a, &b, &c, "--format", "json"]);
    assert_rotated_set(&r);
    // The newest file alone: the rest of the run is not guessed in.
    let r = common::json_of(&["report", &a, "--format", "json"]);
    assert_eq!(r["calls"], 2);
}

#[test]
fn per_rank_logs_numbered_like_a_set_without_its_base_stay_separate_logs() {
    let dir = common::root().join("fixtures/forms/spdlog_rotated");
    let arg = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let out = common::succeeded(
        common::bin()
            .args(["report", &arg("train.1.log"), &arg("train.2.log")])
            .output()
            .unwrap(),
    );
    let out = String::from_utf8_lossy(&out.stdout);
    // Two logs side by side, not one set of 5 calls.
    assert!(!out.contains("rotated set"), "{out}");
    assert!(
        out.contains("train.1.log") && out.contains("train.2.log"),
        "{out}"
    );
}

#[test]
fn graph_exec_lines_with_a_scratchpad_field_keep_their_other_fields() {
    let r = report("graph_scratchpad.log");
    // 0.75 + 0.5 (sdp, with scratchpad:) + 0.25 (a line without it).
    assert_eq!(r["calls"], 3);
    assert!((r["total_time_ms"].as_f64().unwrap() - 1.5).abs() < 1e-9);
    assert_eq!(r["malformed"].as_array().unwrap().len(), 0);
    let rows = r["breakdowns"]["impl"]["rows"].as_array().unwrap();
    let calls = |imp: &str| {
        rows.iter()
            .find(|x| x["impl"] == imp)
            .map(|x| x["calls"].as_u64().unwrap())
    };
    assert_eq!(calls("sdp_primitive_kernel_t:dnnl_backend"), Some(2));
    assert_eq!(calls("larger_partition_kernel_t:dnnl_backend"), Some(1));
}
