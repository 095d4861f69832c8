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
    assert_eq!(a["rules"].as_array().unwrap().len(), 26);
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

/// The log ran oneDNN on 2 threads (its `nthr:2` header); a machine profile of 1 hardware
/// thread makes that oversubscribed, one of 2 a fit: the rule reads the profile it is given.
#[test]
fn thread_oversubscription_uses_the_machine_profile() {
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&log).unwrap()),
        &mut text,
    )
    .unwrap();
    assert!(text.lines().take(50).any(|l| l.contains("nthr:2")));
    let dir = common::temp_dir();
    for (threads, fired) in [(1, true), (2, false)] {
        let m = dir.join(format!("machine-{threads}.json"));
        std::fs::write(
            &m,
            format!(r#"{{"name":"test","threads":{threads},"peak_gflops":{{"f32":100}},"memory_gbps":10}}"#),
        )
        .unwrap();
        let l = log.to_str().unwrap();
        let a = json_of(&[
            "advise",
            l,
            "--machine",
            m.to_str().unwrap(),
            "--format",
            "json",
        ]);
        let r = json_of(&[
            "report",
            l,
            "--machine",
            m.to_str().unwrap(),
            "--format",
            "json",
        ]);
        for advice in [&a, &r["advice"]] {
            let rule = rule_of(advice, "thread-oversubscription");
            assert_eq!(rule["fired"], fired, "{rule}");
            if fired {
                let f = advice["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|f| f["id"] == "thread-oversubscription")
                    .unwrap();
                assert!(f["title"].as_str().unwrap().contains("2 on 1 cores"), "{f}");
            } else {
                assert!(
                    rule["why_not"].as_str().unwrap().contains("fit 2 cores"),
                    "{rule}"
                );
            }
        }
    }
}

/// Issue 13: the HTML report's advice was built without the PyTorch trace, so the rules that
/// need it (here `loss-as-elementwise-ops`, which the terminal and JSON show) were missing.
#[test]
fn html_report_advice_includes_the_pytorch_rules() {
    let log = root().join("fixtures/torch/reference.log.gz");
    let trace = root().join("fixtures/torch/reference.trace.json.gz");
    let dir = common::temp_dir();
    let page = dir.join("torch-advice.html");
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--torch-trace",
            trace.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // The page embeds the advice as JSON: every rule with whether it fired.
    assert!(
        html.contains(r#"{"fired":true,"id":"loss-as-elementwise-ops""#),
        "the PyTorch rule did not fire in the HTML advice"
    );
}

/// A transformer's log (bf16 autocast: Linear as oneDNN matmuls, no convolution): the
/// backward-weights rule says why it does not apply instead of calling it no training log.
#[test]
fn backward_weights_on_a_matmul_log_says_matmuls_have_no_direction() {
    let log = root().join("fixtures/torch/gpt-bf16.log.gz");
    let out = bin()
        .args(["advise", log.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("backward-weights-dominance:"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("matmuls, which oneDNN logs without a direction"),
        "{line}"
    );
    assert!(!line.contains("not a training log"), "{line}");
}

/// With timestamps, findings are ranked by their share of the wall-clock step, shown with it;
/// with a PyTorch trace, time outside oneDNN says what it is (an f32 transformer: GEMMs in the
/// BLAS, attention and element-wise ops in ATen), and a compiled model is not told to compile.
#[test]
fn findings_rank_by_step_share_and_outside_time_is_named_from_the_trace() {
    let advise = |log: &str, trace: &str| {
        json_of(&[
            "advise",
            root().join(log).to_str().unwrap(),
            "--torch-trace",
            root().join(trace).to_str().unwrap(),
            "--format",
            "json",
        ])
    };
    let a = advise(
        "fixtures/torch/gpt-f32.log.gz",
        "fixtures/torch/gpt-f32.trace.json.gz",
    );
    let f = a["findings"].as_array().unwrap();
    let shares: Vec<f64> = f
        .iter()
        .map(|x| x["step_share"].as_f64().unwrap())
        .collect();
    assert!(shares.windows(2).all(|w| w[0] >= w[1]), "{shares:?}");
    assert_eq!(f[0]["id"], "time-outside-onednn");
    assert!(shares[0] > 0.9, "{shares:?}");
    let title = f[0]["title"].as_str().unwrap();
    assert!(
        title.contains("GEMMs in the BLAS") && title.contains("attention in ATen"),
        "{title}"
    );
    assert!(f[0]["action"].as_str().unwrap().contains("torch.compile"));
    let c = advise(
        "fixtures/torch/gpt-compiled.log.gz",
        "fixtures/torch/gpt-compiled.trace.json.gz",
    );
    let out = c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "time-outside-onednn")
        .expect("a compiled run without oneDNN is all outside it");
    let action = out["action"].as_str().unwrap();
    assert!(action.contains("already compiled"), "{action}");
    assert!(!action.contains("or `torch.compile`"), "{action}");
}

/// Issue 51 item 7: with the saved profile of a 2-thread machine, a log recorded on a 56-thread
/// machine of other units got "56 threads on 2 cores: oversubscribed" while the roofline said
/// the log ran elsewhere. The profile's threads are the log's machine's only when the profile is
/// of that machine: the rule stays silent and says why, in `advise` and `report` alike.
#[test]
fn thread_oversubscription_is_silent_on_a_log_of_another_machine() {
    let here = std::thread::available_parallelism().unwrap().get();
    if here >= 56 {
        println!(
            "SKIPPED: this machine has {here} hardware threads: a 56-thread log may be its own"
        );
        return;
    }
    let dir = common::temp_dir();
    let log = dir.join("elsewhere.log");
    std::fs::write(
        &log,
        "onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e)\n\
         onednn_verbose,info,cpu,runtime:OpenMP,nthr:56\n\
         onednn_verbose,info,cpu,isa:Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support\n\
         onednn_verbose,exec,cpu,eltwise,jit:avx512_core,forward_training,data_f32::blocked:abcd:f0 \
         diff_undef::undef::f0,,alg:eltwise_relu alpha:0 beta:0,2x16x8x8,0.01\n",
    )
    .unwrap();
    // (profile's measured kernels, what the rule must say): an AVX2 machine's, and one with the
    // log's units but 2 hardware threads.
    for (isa, why) in [
        (
            r#"["sse","avx2"]"#,
            "another machine than the machine profile's",
        ),
        (
            r#"["sse","avx2","avx512","avx512_bf16","amx"]"#,
            "more threads than the machine profile's machine",
        ),
    ] {
        let m = dir.join("machine.json");
        std::fs::write(
            &m,
            format!(
                r#"{{"name":"saved","threads":2,"isa":{isa},"peak_gflops":{{"f32":100}},"memory_gbps":10}}"#
            ),
        )
        .unwrap();
        let run = |cmd: &str| -> serde_json::Value {
            let mut c = common::bin();
            c.env("PROFILEDNN_MACHINE", &m);
            let out = common::succeeded(
                c.args([cmd, log.to_str().unwrap(), "--format", "json"])
                    .output()
                    .unwrap(),
            );
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let (a, r) = (run("advise"), run("report"));
        for advice in [&a, &r["advice"]] {
            let rule = rule_of(advice, "thread-oversubscription");
            assert_eq!(rule["fired"], false, "{rule}");
            let why_not = rule["why_not"].as_str().unwrap();
            assert!(
                why_not.contains("nthr:56") && why_not.contains(why),
                "{why_not}"
            );
            assert!(why_not.contains("--cores N"), "{why_not}");
        }
    }
}

/// The outcome of rule `id` in an advice's JSON.
fn rule_of<'a>(advice: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    let rules = advice["rules"].as_array().unwrap();
    rules.iter().find(|r| r["id"] == id).unwrap()
}
