//! Every rule on a real (or, for one rule, documented synthetic) log where it fires and one
//! where it does not; evidence checked against figures computed naively from the log text.

mod common;
use common::{fixture, profile, text};
use profilednn_advice::{advise, Advice, Evidence, Thresholds};
use profilednn_analysis::{summarize, Profile, SummaryOptions};
use profilednn_machine::MachineProfile;
use profilednn_verbose::LogInput;

fn run(rels: &[&str], cores: Option<usize>, machine: Option<MachineProfile>) -> Advice {
    let profiles: Vec<Profile> = rels.iter().map(|r| profile(r)).collect();
    let summary = summarize(
        &profiles,
        &SummaryOptions {
            machine,
            ..Default::default()
        },
    );
    let merged = Profile::merge(&profiles);
    advise(
        &Evidence {
            profile: if profiles.len() == 1 {
                &profiles[0]
            } else {
                &merged
            },
            summary: &summary,
            ranks: profiles.len(),
            cores,
            sockets: None,
            physical_cores: None,
            cores_from: None,
            cores_unknown: None,
            torch: None,
            twin: None,
            projections: &[],
            step_what_ifs: &[],
            nodes: &[],
            launch: None,
        },
        &Thresholds::default(),
    )
}

fn fires(a: &Advice, id: &str) -> bool {
    let fired = a.rules.iter().find(|r| r.id == id).unwrap().fired;
    assert_eq!(fired, a.finding(id).is_some());
    fired
}

/// Time of exec lines whose kind and prop_kind fields match (`None` = any), computed by
/// splitting the text (v1 lines: kind is field 5, prop field 7, time last).
fn naive_ms(log: &str, kind: Option<&str>, prop: Option<&str>) -> f64 {
    log.lines()
        .filter(|l| l.starts_with("onednn_verbose,v1,primitive,exec,"))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| kind.is_none_or(|k| f[5] == k) && prop.is_none_or(|p| f[7] == p))
        .map(|f| f.last().unwrap().parse::<f64>().unwrap())
        .sum()
}

const RESNET_FP32: &str = "corpus/pytorch/resnet50_fp32.log.gz";
const RESNET_BF16: &str = "corpus/pytorch/resnet50_bf16_cl.log.gz";
const RETINANET_FP32: &str = "corpus/pytorch/retinanet_rnx50_fp32.log.gz";
const BENCHDNN_RESNET: &str = "corpus/onednn/v3_14_benchdnn_resnet50_f32/resnet50_f32_train.log";
const LEVEL2_TS: &str = "corpus/onednn/v3_14_benchdnn_level2_timestamp/level2_timestamp.log";
const TINY: &str = "advice/tiny_primitives.log";

#[test]
fn reorder_overhead() {
    let a = run(&[RESNET_FP32], None, None);
    assert!(fires(&a, "reorder-overhead"));
    let log = text(RESNET_FP32);
    let share = naive_ms(&log, Some("reorder"), None) / naive_ms(&log, None, None);
    let got = a.finding("reorder-overhead").unwrap().evidence["share"]
        .as_f64()
        .unwrap();
    assert!((got - share).abs() < 1e-6, "{got} vs naive {share}");
    let quiet = run(&["corpus/pytorch/transformer_bf16.log.gz"], None, None);
    assert!(!fires(&quiet, "reorder-overhead"));
}

#[test]
fn reference_implementation() {
    let a = run(
        &["corpus/onednn/v3_14_benchdnn_primitives/primitives.log"],
        None,
        None,
    );
    assert!(fires(&a, "reference-implementation"));
    let ev = &a.finding("reference-implementation").unwrap().evidence;
    for row in ev["heaviest"].as_array().unwrap() {
        let p = row["primitive"].as_str().unwrap();
        assert!(p.contains("ref") || p.contains("simple"), "{p}");
    }
    assert!(!fires(
        &run(&[RESNET_BF16], None, None),
        "reference-implementation"
    ));
}

#[test]
fn f32_on_bf16_hardware() {
    assert!(fires(
        &run(&[RESNET_FP32], None, None),
        "f32-on-bf16-hardware"
    ));
    // The same model in bf16: quiet.
    assert!(!fires(
        &run(&[RESNET_BF16], None, None),
        "f32-on-bf16-hardware"
    ));
    // f32 on a CPU without bf16 units: quiet.
    assert!(!fires(&run(&[TINY], None, None), "f32-on-bf16-hardware"));
}

/// A real oneDNN 3.2 log of bf16 training on AVX-512 with DL Boost only
/// (`ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI ./train_v3 3 bf16`, see fixtures/advice/README.md):
/// convolutions run `jit_bf16:avx512_core`, i.e. through f32. Figures from the text: bf16
/// convolutions' and inner products' time over all exec time (v3.2 lines: kind field 3,
/// implementation 4, time last).
#[test]
fn bf16_without_bf16_units() {
    const LOG: &str = "advice/bf16_without_bf16_units.log";
    let a = run(&[LOG], None, None);
    assert!(fires(&a, "bf16-without-bf16-units"));
    let log = text(LOG);
    let exec: Vec<Vec<&str>> = log
        .lines()
        .filter(|l| l.starts_with("onednn_verbose,exec,"))
        .map(|l| l.split(',').collect())
        .collect();
    let ms = |f: &Vec<&str>| f.last().unwrap().parse::<f64>().unwrap();
    let all: f64 = exec.iter().map(ms).sum();
    let bf16: Vec<&Vec<&str>> = exec
        .iter()
        .filter(|f| f[3] == "convolution" || f[3] == "inner_product")
        .filter(|f| f[6].contains("wei_bf16"))
        .collect();
    let bf16_ms: f64 = bf16.iter().map(|f| ms(f)).sum();
    let f = a.finding("bf16-without-bf16-units").unwrap();
    let share = f.evidence["share"].as_f64().unwrap();
    assert!(
        (share - bf16_ms / all).abs() < 1e-9,
        "{share} vs naive {}",
        bf16_ms / all
    );
    assert_eq!(
        f.evidence["isa"],
        serde_json::json!(["Intel AVX-512 with Intel DL Boost"])
    );
    let impls: Vec<&str> = f.evidence["implementations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["implementation"].as_str().unwrap())
        .collect();
    assert!(impls.contains(&"jit_bf16:avx512_core"), "{impls:?}");
    let mut naive_impls: Vec<&str> = bf16.iter().map(|f| f[4]).collect();
    naive_impls.sort();
    naive_impls.dedup();
    let mut got = impls.clone();
    got.sort();
    assert_eq!(got, naive_impls);
    assert!(
        f.title.contains("Intel AVX-512 with Intel DL Boost"),
        "{}",
        f.title
    );
    assert!(f.action.contains("f32"), "{}", f.action);
    // The same program's bf16 run on a CPU with bf16 units, and ResNet-50 bf16 with AMX: quiet.
    assert!(!fires(
        &run(
            &["corpus/onednn/v3_2_pypi/train_bf16_attrs.level1.log"],
            None,
            None
        ),
        "bf16-without-bf16-units"
    ));
    assert!(!fires(
        &run(&[RESNET_BF16], None, None),
        "bf16-without-bf16-units"
    ));
    // f32 on a CPU without bf16 units: quiet.
    assert!(!fires(&run(&[TINY], None, None), "bf16-without-bf16-units"));
}

#[test]
fn unfused_post_ops() {
    assert!(fires(
        &run(&[BENCHDNN_RESNET], None, None),
        "unfused-post-ops"
    ));
    assert!(!fires(
        &run(&[RETINANET_FP32], None, None),
        "unfused-post-ops"
    ));
}

#[test]
fn backward_weights_dominance() {
    let a = run(&[RESNET_BF16], None, None);
    assert!(fires(&a, "backward-weights-dominance"));
    let log = text(RESNET_BF16);
    let ratio = naive_ms(&log, Some("convolution"), Some("backward_weights"))
        / naive_ms(&log, Some("convolution"), Some("forward_training"));
    let got = a.finding("backward-weights-dominance").unwrap().evidence["ratio_to_forward"]
        .as_f64()
        .unwrap();
    assert!((got - ratio).abs() < 1e-6, "{got} vs naive {ratio}");
    assert!(!fires(
        &run(&[RETINANET_FP32], None, None),
        "backward-weights-dominance"
    ));
}

#[test]
fn tiny_primitives() {
    let a = run(&[TINY], None, None);
    assert!(fires(&a, "tiny-primitives"));
    let f = a.finding("tiny-primitives").unwrap();
    // 4 iterations x 120 element-wise calls of about 2 µs, 5 µs assumed overhead each.
    assert_eq!(f.evidence["calls"].as_u64(), Some(480));
    assert!((f.gain_ms_per_iteration.unwrap() - 120.0 * 5e-3).abs() < 1e-9);
    assert!(!fires(&run(&[RESNET_FP32], None, None), "tiny-primitives"));
}

#[test]
fn time_outside_onednn() {
    assert!(fires(&run(&[LEVEL2_TS], None, None), "time-outside-onednn"));
    let a = run(
        &["corpus/onednn/v3_14_train_c/train_f32_attrs.level2_timestamp.log"],
        None,
        None,
    );
    assert!(!fires(&a, "time-outside-onednn"));
    // No timestamps: not applicable, and said so.
    let a = run(&[RESNET_FP32], None, None);
    let r = a
        .rules
        .iter()
        .find(|r| r.id == "time-outside-onednn")
        .unwrap();
    assert!(r.why_not.as_deref().unwrap().contains("no timestamps"));
}

#[test]
fn creation_cache_misses() {
    assert!(fires(
        &run(&[LEVEL2_TS], None, None),
        "creation-cache-misses"
    ));
    let a = run(
        &["corpus/onednn/v3_2_pypi/train_f32_attrs.level2_timestamp.log"],
        None,
        None,
    );
    assert!(!fires(&a, "creation-cache-misses"));
}

#[test]
fn thread_oversubscription() {
    // The PyTorch logs say nthr:2.
    assert!(fires(
        &run(&[RESNET_FP32], Some(1), None),
        "thread-oversubscription"
    ));
    assert!(!fires(
        &run(&[RESNET_FP32], Some(2), None),
        "thread-oversubscription"
    ));
    // Two ranks of two threads on two cores.
    let two = run(&[RESNET_FP32, RESNET_BF16], Some(2), None);
    assert!(fires(&two, "thread-oversubscription"));
    // Most cores idle.
    assert!(fires(
        &run(&[RESNET_FP32], Some(8), None),
        "thread-oversubscription"
    ));
    assert!(!fires(
        &run(&[RESNET_FP32], None, None),
        "thread-oversubscription"
    ));
}

#[test]
fn low_roofline_efficiency() {
    let machine = |f32: f64, bf16: f64, bw: f64| -> MachineProfile {
        serde_json::from_str(&format!(
            r#"{{"name":"m","peak_gflops":{{"f32":{f32},"bf16":{bf16}}},"memory_gbps":{bw}}}"#
        ))
        .unwrap()
    };
    // A spec-sheet Xeon: these backward-weights kernels are far from its roofline.
    let xeon = Some(machine(7168.0, 229376.0, 614.0));
    assert!(fires(
        &run(&[RESNET_BF16], None, xeon),
        "low-roofline-efficiency"
    ));
    // A machine so slow that the log beats its roofline everywhere.
    let slow = Some(machine(0.001, 0.001, 0.001));
    assert!(!fires(
        &run(&[RESNET_BF16], None, slow),
        "low-roofline-efficiency"
    ));
    assert!(!fires(
        &run(&[RESNET_BF16], None, None),
        "low-roofline-efficiency"
    ));
}

#[test]
fn findings_are_ordered_by_gain_and_ids_are_stable() {
    let a = run(&[BENCHDNN_RESNET], None, None);
    // timings-polluted first when it fires (it qualifies every other figure), then by gain.
    let polluted = a.findings.iter().position(|f| f.id == "timings-polluted");
    assert!(polluted.is_none_or(|i| i == 0), "{polluted:?}");
    let gains: Vec<f64> = a
        .findings
        .iter()
        .filter(|f| f.id != "timings-polluted")
        .map(|f| f.gain_ms.unwrap_or(0.0))
        .collect();
    assert!(gains.windows(2).all(|w| w[0] >= w[1]), "{gains:?}");
    let ids: Vec<&str> = a.rules.iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        [
            "reorder-overhead",
            "reference-implementation",
            "f32-on-bf16-hardware",
            "bf16-without-bf16-units",
            "unfused-post-ops",
            "backward-weights-dominance",
            "tiny-primitives",
            "time-outside-onednn",
            "creation-cache-misses",
            "thread-oversubscription",
            "low-roofline-efficiency",
            "loss-as-elementwise-ops",
            "normalization-as-elementwise-ops",
            "optimizer-as-many-ops",
            "data-loading-stall",
            "rank-imbalance",
            "rank-thread-placement",
            "launch-config",
            "timings-polluted",
            "whole-step-bf16",
            "compile-warm-up",
            "compile-vs-eager",
            "compile-graph-breaks",
            "gemm-outside-onednn",
            "attention-share",
            "elementwise-unfused"
        ]
    );
}

/// The PyTorch join of `fixtures/torch/VARIANT.trace.json.gz` with its log.
fn torch_join(variant: &str) -> profilednn_torchtrace::TorchJoin {
    let log = format!("torch/{variant}.log.gz");
    let trace =
        profilednn_torchtrace::read_trace(&fixture(&format!("torch/{variant}.trace.json.gz")))
            .unwrap();
    profilednn_analysis::torch_join::join(&trace, LogInput::open(&fixture(&log)).unwrap())
}

fn run_torch(variant: &str) -> Advice {
    let p = profile(&format!("torch/{variant}.log.gz"));
    let summary = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
    let j = torch_join(variant);
    advise(
        &Evidence {
            profile: &p,
            summary: &summary,
            ranks: 1,
            cores: None,
            sockets: None,
            physical_cores: None,
            cores_from: None,
            cores_unknown: None,
            torch: Some(&j),
            twin: None,
            projections: &[],
            step_what_ifs: &[],
            nodes: &[],
            launch: None,
        },
        &Thresholds::default(),
    )
}

#[test]
fn pytorch_view_rules_on_real_runs() {
    // torchvision's focal loss, FrozenBatchNorm2d, torch.optim.SGD for-loop.
    let reference = run_torch("reference");
    for id in [
        "loss-as-elementwise-ops",
        "normalization-as-elementwise-ops",
        "optimizer-as-many-ops",
    ] {
        assert!(
            fires(&reference, id),
            "{id} should fire on the reference run"
        );
    }
    // ProfileDNN's fused loss and optimizer: those two rules are quiet.
    let fused = run_torch("fused");
    assert!(!fires(&fused, "loss-as-elementwise-ops"));
    assert!(!fires(&fused, "optimizer-as-many-ops"));
    assert!(
        fires(&fused, "normalization-as-elementwise-ops"),
        "still FrozenBatchNorm2d"
    );
    // Trainable BatchNorm2d: normalization runs as batch_norm ops.
    let bn = run_torch("bn");
    assert!(!fires(&bn, "normalization-as-elementwise-ops"));
    // A data step doing real work on the training thread.
    let slow = run_torch("slowdata");
    assert!(fires(&slow, "data-loading-stall"));
    // The time outside oneDNN names the data step among its parts (it once matched the phase
    // rows by their empty `phase` and never found it).
    let outside = slow
        .findings
        .iter()
        .find(|f| f.id == "time-outside-onednn")
        .expect("time-outside-onednn fires on slowdata");
    assert!(outside.title.contains("data loading"), "{}", outside.title);
    assert!(!fires(&reference, "data-loading-stall"));
    // The same at RetinaNet scale (ResNeXt-50-FPN, 264 classes): the reference run gets the
    // loss and optimizer findings, the run with ProfileDNN's loss and SGD does not.
    let rn_ref = run_torch("retinanet-reference");
    let rn_fused = run_torch("retinanet-fused");
    for id in ["loss-as-elementwise-ops", "optimizer-as-many-ops"] {
        assert!(fires(&rn_ref, id), "{id} on RetinaNet reference");
        assert!(!fires(&rn_fused, id), "{id} on RetinaNet fused");
    }
    assert!(fires(&rn_ref, "f32-on-bf16-hardware"));
    assert!(
        !fires(&rn_fused, "f32-on-bf16-hardware"),
        "the fused run trains in bf16"
    );
    // Without a trace the rules say they do not apply.
    let plain = run(&[RESNET_FP32], None, None);
    let r = plain
        .rules
        .iter()
        .find(|r| r.id == "loss-as-elementwise-ops")
        .unwrap();
    assert!(r.why_not.as_deref().unwrap().contains("no PyTorch trace"));
}

/// Evidence rows of primitives that differ only in layouts (reorders between different
/// blockings of one weight) once read identically ("reorder undef jit:uni 256x256x3x3" three
/// times with three times). Each row now names its layouts, and its time is the naive sum of
/// the exec lines with that problem and those layouts (v1 lines: impl field 6, memory
/// descriptors 8, problem 11).
#[test]
fn evidence_rows_with_the_same_description_show_their_layouts() {
    let a = run(&[RESNET_BF16], None, None);
    let rows = a.finding("reorder-overhead").unwrap().evidence["heaviest"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["primitive"].as_str().unwrap())
        .collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    let log = text(RESNET_BF16);
    let mut checked = 0;
    for r in &rows {
        let p = r["primitive"].as_str().unwrap();
        let Some((head, lay)) = p.split_once(" [") else {
            continue;
        };
        let problem = head.rsplit(' ').next().unwrap();
        let want: Vec<&str> = lay.trim_end_matches(']').split(' ').collect();
        let naive: f64 = log
            .lines()
            .filter(|l| l.starts_with("onednn_verbose,v1,primitive,exec,"))
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f[5] == "reorder" && f[11] == problem)
            .filter(|f| {
                let got: Vec<String> = f[8]
                    .split(' ')
                    .map(|md| {
                        let m: Vec<&str> = md.split(':').collect();
                        format!("{}:{}:{}", m[0], m[1], m[4])
                    })
                    .collect();
                got == want
            })
            .map(|f| f.last().unwrap().parse::<f64>().unwrap())
            .sum();
        let got = r["time_ms"].as_f64().unwrap();
        assert!(
            (got - naive).abs() < 1e-6 * naive.max(1.0),
            "{p}: {got} vs {naive}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "{names:?}");
}

/// A CPU without bf16 units (the log's ISA line): `backward-weights-dominance` used to
/// recommend bf16 (AMX) there, contradicting `bf16-without-bf16-units`.
#[test]
fn backward_weights_advice_does_not_recommend_bf16_without_bf16_units() {
    let a = run(&["advice/bf16_without_bf16_units.log"], None, None);
    let f = a
        .finding("backward-weights-dominance")
        .expect("the rule fires on this log");
    assert!(!f.action.contains("bf16 (AMX"), "{}", f.action);
    assert!(f.action.contains("no bf16 units"), "{}", f.action);
}

/// Regression (the rank-spans-sockets check counted hardware threads as cores): 1 rank of 56
/// threads on 2 sockets × 28 cores × 2 hardware threads (a hand-built machine: 112 threads, 56
/// physical cores) spans both sockets, which 112 "cores" in 2 sockets of 56 hid. Without the
/// physical cores the check is skipped, and the rule says why.
#[test]
fn rank_spanning_sockets_is_judged_by_physical_cores_not_hardware_threads() {
    let placement = |threads: u32, physical_cores: Option<usize>| {
        let mut p = profile("multirank/even_1x2.log.gz");
        p.metadata.threads = Some(threads);
        let summary = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
        let a = advise(
            &Evidence {
                profile: &p,
                summary: &summary,
                ranks: 1,
                cores: Some(112),
                sockets: Some(2),
                physical_cores,
                cores_from: None,
                cores_unknown: None,
                torch: None,
                twin: None,
                projections: &[],
                step_what_ifs: &[],
                nodes: &[],
                launch: None,
            },
            &Thresholds::default(),
        );
        let why_not = a
            .rules
            .iter()
            .find(|r| r.id == "rank-thread-placement")
            .unwrap()
            .why_not
            .clone();
        (a.finding("rank-thread-placement").cloned(), why_not)
    };
    let (f, _) = placement(56, Some(56));
    let f = f.expect("56 threads on 2 sockets of 28 cores span them");
    assert!(f.title.contains("spans sockets"), "{}", f.title);
    assert_eq!(f.evidence["cores_per_socket"], 28);
    // 28 threads fit one socket of 28 physical cores.
    assert!(placement(28, Some(56)).0.is_none());
    // Physical cores unknown: skipped, said so.
    let (f, why) = placement(56, None);
    assert!(f.is_none());
    let why = why.unwrap();
    assert!(why.contains("physical cores are unknown"), "{why}");
}

/// Identical calls an order of magnitude apart, most of them slow (a newcomer's run beside two
/// busy processes: one reorder at 0.005-0.03 ms or 7-8 ms): `timings-polluted` fires and names
/// the primitive; one cold first call among fast ones does not.
#[test]
fn identical_calls_far_apart_are_flagged_as_polluted() {
    let line = |ms: f64| {
        format!(
            "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,src:f32::blocked:abcd::f0 \
             dst:f32::blocked:aBcd16b::f0,,,2x256x8x8,{ms}\n"
        )
    };
    let conv = |ms: f64| {
        format!(
            "onednn_verbose,v1,primitive,exec,cpu,convolution,brg:avx512_core,forward_training,\
             src:f32::blocked:acdb::f0 wei:f32::blocked:Acdb16a::f0 bia:undef::undef:: \
             dst:f32::blocked:acdb::f0,,alg:convolution_direct,mb2_ic64oc64_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1,{ms}\n"
        )
    };
    let write = |name: &str, text: String| {
        let dir = std::env::temp_dir().join(format!("profilednn-polluted-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    // Polluted: 168 calls, a quarter at 0.01 ms, the rest at 7.5 ms.
    let mut text: String = (0..168)
        .map(|i| line(if i % 4 == 0 { 0.01 } else { 7.5 }))
        .collect();
    text += &(0..20).map(|_| conv(1.0)).collect::<String>();
    let polluted = write("polluted.log", text);
    // Quiet: one cold first call (5 ms), the others within 2x of each other.
    let mut text: String = line(5.0);
    text += &(0..167)
        .map(|i| line(if i % 2 == 0 { 0.01 } else { 0.02 }))
        .collect::<String>();
    text += &(0..20).map(|_| conv(1.0)).collect::<String>();
    let quiet = write("quiet.log", text);
    let advise = |path: &std::path::Path| {
        let p = profilednn_analysis::Profile::from_scan(
            "t",
            profilednn_analysis::scan(
                profilednn_verbose::LogInput::open(path).unwrap(),
                &Default::default(),
            ),
            &Default::default(),
        );
        let summary = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
        let ev = Evidence::from_profiles(std::slice::from_ref(&p), &p, &summary, None, None);
        profilednn_advice::advise(&ev, &Thresholds::default())
    };
    let a = advise(&polluted);
    let f = a
        .findings
        .iter()
        .find(|f| f.id == "timings-polluted")
        .expect("fires on calls 750x apart");
    assert_eq!(f.evidence["primitives"], 1);
    assert!(f.evidence["worst_spread"].as_f64().unwrap() > 500.0);
    assert!(!fires(&advise(&quiet), "timings-polluted"));
}

/// `whole-step-bf16` by hand: a step replayed at 180 ms as recorded and 144 ms in bf16 (1.25×)
/// is recommended with a gain of 36 ms per iteration; 176 ms against 180 (1.02×) is not; a
/// replay twice the recorded step is flagged.
/// A whole-step bf16 projection of hand-made figures (ms).
fn step_what_if(logged: f64, base: f64, bf16: f64) -> profilednn_advice::StepWhatIf {
    profilednn_advice::StepWhatIf {
        transform: "--as bf16".into(),
        logged_step_ms: logged,
        baseline_step_ms: base,
        baseline: profilednn_advice::StepBaseline::ReplayedAsRecorded,
        projected_step_ms: bf16,
        gemm_attention_ms: (100.0, 60.0),
        replayed_with: "PyTorch 2.15.0 at 2 thread(s)".into(),
    }
}

/// The advice on a real 1-rank log with the whole-step projections `w`.
fn advise_with_step(w: &[profilednn_advice::StepWhatIf]) -> Advice {
    let p = profile("multirank/even_1x2.log.gz");
    let summary = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
    advise(
        &Evidence::from_profiles(std::slice::from_ref(&p), &p, &summary, None, None)
            .with_step_what_ifs(w),
        &Thresholds::default(),
    )
}

#[test]
fn whole_step_bf16_is_judged_by_the_projected_step() {
    let (run, what_if) = (advise_with_step, step_what_if);
    let a = run(&[what_if(182.0, 180.0, 144.0)]);
    let f = a.finding("whole-step-bf16").expect("1.25x pays");
    // The replays' ratio on the recorded step: 182 × (1 − 144/180) = 36.4 ms.
    assert!((f.gain_ms_per_iteration.unwrap() - 36.4).abs() < 1e-9);
    assert!(f.title.contains("180.0 → 144.0 ms"), "{}", f.title);
    assert!(!f.title.contains("caution"));
    let a = run(&[what_if(182.0, 180.0, 176.0)]);
    assert!(a.finding("whole-step-bf16").is_none());
    assert!(a.not_recommended.iter().any(|n| n.id == "whole-step-bf16"));
    let a = run(&[what_if(90.0, 180.0, 144.0)]);
    assert!(a
        .finding("whole-step-bf16")
        .unwrap()
        .title
        .contains("caution"));
    // Without a whole-step projection the rule says what it needs.
    let a = run(&[]);
    assert!(!fires(&a, "whole-step-bf16"));
    // A bf16 replay file without an as-recorded one is set against the recorded step, and
    // says so (the replay's own error is then in the ratio): 200 → 160 ms, 1.25×, 40 ms.
    let mut w = what_if(200.0, 200.0, 160.0);
    w.baseline = profilednn_advice::StepBaseline::Recorded;
    let a = run(&[w]);
    let f = a.finding("whole-step-bf16").expect("1.25x pays");
    assert!(f.title.contains("against the recorded step"), "{}", f.title);
    assert!(!f.title.contains("replayed as recorded"), "{}", f.title);
    assert!((f.gain_ms_per_iteration.unwrap() - 40.0).abs() < 1e-9);
    assert_eq!(
        a.step_projections.len(),
        1,
        "the advice lists the step projection"
    );
}

/// `whole-step-bf16` whose as-recorded replay is not the recorded step (issue 51: 12.98× a
/// 254 ms step, "up to 2178.8 ms per iteration", ranked first): outside 0.5–2× no gain and no
/// rank; inside, the gain is the replays' ratio on the recorded step, never more than the step.
#[test]
fn a_whole_step_gain_never_exceeds_the_step_nor_ranks_on_a_replay_far_off() {
    let (run, what_if) = (advise_with_step, step_what_if);
    // The transformer's figures: 254 ms recorded, 3296.9 ms replayed as recorded (12.98×),
    // 1118.1 ms in bf16 (the old gain, 2178.8 ms, was 8.6 steps).
    let a = run(&[what_if(254.0, 3296.9, 1118.1)]);
    let f = a
        .finding("whole-step-bf16")
        .expect("listed, without a gain");
    assert_eq!(f.gain_ms_per_iteration, None);
    assert_eq!(f.gain_ms, None);
    assert_eq!(f.step_share, None);
    for want in ["no gain given", "12.98× the recorded one, outside 0.5–2×"] {
        assert!(f.title.contains(want), "{want}: {}", f.title);
    }
    // It ranks below every finding with a share or a gain.
    let at = a.findings.iter().position(|f| f.id == "whole-step-bf16");
    let at = at.unwrap();
    let ranked = |f: &profilednn_advice::Finding| {
        f.step_share.unwrap_or(0.0) > 0.0 || f.gain_ms.unwrap_or(0.0) > 0.0
    };
    assert!(a.findings[..at].iter().any(ranked) || at == 0);
    assert!(!a.findings[at + 1..].iter().any(ranked), "{:?}", a.findings);
    // Too fast a replay is as untrusted: 0.4× the step.
    let a = run(&[what_if(100.0, 40.0, 20.0)]);
    assert_eq!(
        a.finding("whole-step-bf16").unwrap().gain_ms_per_iteration,
        None
    );
    // 1.9× the step (trusted, with the caution), 2× faster in bf16: 100 × (1 − 95/190) = 50 ms,
    // where the difference of the replays (95 ms) was nearly the whole step.
    let a = run(&[what_if(100.0, 190.0, 95.0)]);
    let f = a.finding("whole-step-bf16").unwrap();
    assert!((f.gain_ms_per_iteration.unwrap() - 50.0).abs() < 1e-9);
    assert!(f.title.contains("caution"), "{}", f.title);
    // Even an impossible 1000× speed-up gains less than the step.
    let a = run(&[what_if(100.0, 100.0, 0.1)]);
    let g = a
        .finding("whole-step-bf16")
        .unwrap()
        .gain_ms_per_iteration
        .unwrap();
    assert!(g < 100.0 && (g - 99.9).abs() < 1e-9, "{g}");
}

/// On a log whose timings look polluted, `timings-polluted` comes first: the bundled RetinaNet
/// log's reorders (54.6 % of its time, the heaviest finding's subject) are the polluted ones
/// (a 2x256x32x32 reorder at 0.07 ms or 4–12 ms in every iteration), so the doubt must be read
/// before the reorder finding built on them (issue 41: "Nothing warned").
#[test]
fn polluted_timings_are_the_first_finding() {
    let a = run(&["corpus/pytorch/retinanet_rnx50_fp32.log.gz"], None, None);
    let ids: Vec<&str> = a.findings.iter().map(|f| f.id).collect();
    assert_eq!(ids.first(), Some(&"timings-polluted"), "{ids:?}");
    assert!(ids.contains(&"reorder-overhead"), "{ids:?}");
}

/// Issue 51 item 6: a log of 6 iterations with a trace of 5 read "gain: up to 46.2 ms (7.7 ms
/// per iteration)": the trace's total over the log's count. A hand-made trace view of 5
/// iterations: data loading 50 ms and an optimizer of 500 ops in 30 ms, against forward 150
/// and backward 20 ms (250 ms in all). Per trace iteration: data 50 / 5 = 10 ms (all of it),
/// optimizer 30 × 0.5 / 5 = 3 ms (half); over the log's 6 iterations 60 and 18 ms. The share of
/// the step is the trace's (50 / 250 = 20 %, 30 / 250 = 12 %), the one the title states.
/// Before: data 50 ms "(8.3 ms per iteration)", 50 / 6, and a share of the log's span beside it.
#[test]
fn trace_gains_are_per_trace_iteration_and_one_share_of_the_step() {
    use profilednn_torchtrace::{OpRow, Phase, TorchJoin};
    let p = profile("torch/reference.log.gz");
    let mut summary = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
    summary
        .iterations
        .as_mut()
        .expect("the log marks iterations")
        .count = 6;
    let phase = |ph: Phase, calls: u64, time_ms: f64| OpRow {
        name: ph.as_str().to_string(),
        calls,
        time_ms,
        ..Default::default()
    };
    let j = TorchJoin {
        phases: vec![
            phase(Phase::Data, 5, 50.0),
            phase(Phase::Forward, 500, 150.0),
            phase(Phase::Backward, 500, 20.0),
            phase(Phase::Optimizer, 500, 30.0),
        ],
        iterations: Some(5),
        log_iterations: Some(6),
        ..Default::default()
    };
    let mut ev = Evidence::from_profiles(std::slice::from_ref(&p), &p, &summary, None, None);
    ev.torch = Some(&j);
    let a = advise(&ev, &Thresholds::default());
    for (id, per_iteration, share) in [
        ("data-loading-stall", 10.0, 0.2),
        ("optimizer-as-many-ops", 3.0, 0.12),
    ] {
        let f = a.finding(id).unwrap_or_else(|| panic!("{id} fires"));
        let close = |x: Option<f64>, want: f64| (x.unwrap() - want).abs() < 1e-9;
        assert!(close(f.gain_ms_per_iteration, per_iteration), "{id}: {f:?}");
        assert!(close(f.gain_ms, per_iteration * 6.0), "{id}: {f:?}");
        assert!(close(f.step_share, share), "{id}: {f:?}");
        assert!(
            f.title.contains(&format!("{:.1}%", share * 100.0)),
            "{}",
            f.title
        );
    }
}

/// `compile-graph-breaks` on fixtures/torch/compile-breaks (compile_breaks.py: a `print` in
/// the forward, the batch growing from 16 to 24 at the third step): the break and both frames'
/// recompilations, with Dynamo's reasons; the GPT compiled whole has none.
#[test]
fn graph_breaks_and_recompilations_are_named() {
    let a = run_torch("compile-breaks");
    let f = a
        .finding("compile-graph-breaks")
        .expect("the print breaks the graph");
    assert!(
        f.title.contains("broke the graph") && f.title.contains("print"),
        "{}",
        f.title
    );
    assert!(
        f.title.contains("recompiled 2 time(s)") && f.title.contains("expected 16, actual 24"),
        "{}",
        f.title
    );
    assert_eq!(f.evidence["frames"], 2);
    assert!(f.gain_ms.is_none());
    assert!(!fires(&run_torch("gpt-compiled"), "compile-graph-breaks"));
}

/// `compile-warm-up` on the compiled GPT fixture. By hand from its trace: iteration 0 (the
/// compile) is 3204.613 ms; of iterations 0–3 the first two are warm-up and 0 compiled, so the
/// steady step is the median of 17.983 and 17.928 = 17.956 ms; compiling cost 3204.613 −
/// 17.956 = 3186.66 ms. An eager run has no such finding.
#[test]
fn compile_warm_up_on_the_compiled_gpt() {
    let a = run_torch("gpt-compiled");
    let f = a.finding("compile-warm-up").expect("the run compiled");
    let e = |k: &str| f.evidence[k].as_f64().unwrap();
    assert!(
        (e("first_step_ms") - 3204.613).abs() < 1e-3,
        "{:?}",
        f.evidence
    );
    assert!((e("steady_step_ms") - 17.956).abs() < 1e-3);
    assert!((e("compile_ms") - 3186.657).abs() < 1e-3);
    assert!(f.title.starts_with("compiling costs 3.2 s"), "{}", f.title);
    assert!(f.gain_ms.is_none());
    assert!(!fires(&run_torch("gpt-f32"), "compile-warm-up"));
}

/// `compile-vs-eager` on gpt-f32 (eager) against gpt-compiled, the eager run's Python-stack
/// events uncounted so that the pair counts as profiled alike. By hand from the traces
/// (`crates/cli/tests/compiled_diff.rs`): eager steady iterations 28.802 and 25.833 ms (median
/// 27.317), compiled 17.983 and 17.928 (17.956): ranges apart, not a tie; compiled 1.52×
/// faster, 9.361 ms saved per step, the gain of compiling this eager run.
#[test]
fn compile_vs_eager_on_the_gpt_pair() {
    let mut eager = torch_join("gpt-f32");
    eager.python_events = 0;
    let compiled = torch_join("gpt-compiled");
    let p = profile("torch/gpt-f32.log.gz");
    let summary = summarize(std::slice::from_ref(&p), &SummaryOptions::default());
    let ev = Evidence::from_profiles(std::slice::from_ref(&p), &p, &summary, None, Some(&eager))
        .with_twin(Some(&compiled));
    let a = advise(&ev, &Thresholds::default());
    let f = a.finding("compile-vs-eager").expect("a pair");
    let e = |k: &str| f.evidence[k].as_f64().unwrap();
    assert!(
        (e("eager_step_ms") - 27.317).abs() < 1e-3,
        "{:?}",
        f.evidence
    );
    assert!((e("compiled_step_ms") - 17.956).abs() < 1e-3);
    assert_eq!(f.evidence["tie"], false);
    assert_eq!(f.evidence["faster"], "compiled");
    assert_eq!(f.evidence["this_run"], "eager");
    assert!(
        f.title.starts_with("the compiled step is 1.52x faster"),
        "{}",
        f.title
    );
    let per = f.gain_ms_per_iteration.expect("compiling pays");
    assert!((per - 9.361).abs() < 1e-2, "{per}");
    // The compiled run against the same eager twin: already the faster way, no gain.
    let ev = Evidence::from_profiles(
        std::slice::from_ref(&p),
        &p,
        &summary,
        None,
        Some(&compiled),
    )
    .with_twin(Some(&eager));
    let a = advise(&ev, &Thresholds::default());
    let f = a.finding("compile-vs-eager").unwrap();
    assert_eq!(f.evidence["this_run"], "compiled");
    assert!(f.gain_ms.is_none());
    assert!(f.action.starts_with("Keep compiling"), "{}", f.action);
    // Without the twin the rule says what it needs.
    let ev = Evidence::from_profiles(std::slice::from_ref(&p), &p, &summary, None, Some(&eager));
    assert!(advise(&ev, &Thresholds::default())
        .finding("compile-vs-eager")
        .is_none());
}
