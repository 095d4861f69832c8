//! `profilednn plan`: the splits of the cores into ranks × threads, their all-reduce and memory
//! figures against counts made by hand from the fixture's model, and (with oneDNN) a replayed
//! plan of this machine's two cores.

mod common;

use common::{bin, dnnl_lib_or_skip, failed, json_of, root, temp_dir};
use serde_json::Value;
use std::io::Read;

fn fixture() -> String {
    root()
        .join("fixtures/whatif/f32-nchw.log.gz")
        .display()
        .to_string()
}

fn row<'a>(plan: &'a Value, split: &str) -> &'a Value {
    plan["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["split"] == split)
        .unwrap_or_else(|| panic!("no split {split} in {plan}"))
}

/// The fixture is torchvision's resnet18 (10 classes) at batch 8, 64×64 images, f32. oneDNN ran
/// its convolutions only (PyTorch ran batch norm, ReLU, pooling and the linear layer itself),
/// so the gradients the log implies are the 20 convolutions' weights, counted here by layer:
const CONV_WEIGHTS: u64 = 3 * 64 * 7 * 7 // conv1: 9408
    + 4 * (64 * 64 * 9) // layer1: 147456
    + (64 * 128 * 9 + 3 * 128 * 128 * 9 + 64 * 128) // layer2 + 1×1 downsample: 524288
    + (128 * 256 * 9 + 3 * 256 * 256 * 9 + 128 * 256) // layer3: 2097152
    + (256 * 512 * 9 + 3 * 512 * 512 * 9 + 256 * 512); // layer4: 8388608

/// The convolutions' outputs per sample (kept for the backward pass), by layer.
const CONV_OUTPUTS_PER_SAMPLE: u64 = 64 * 32 * 32 // conv1
    + 4 * (64 * 16 * 16) // layer1
    + 5 * (128 * 8 * 8) // layer2, with the downsample
    + 5 * (256 * 4 * 4)
    + 5 * (512 * 2 * 2);

#[test]
fn resnet18_weights_by_hand() {
    // torchvision's resnet18 has 11,689,512 parameters with 1000 classes: convolutions
    // 11,166,912 + batch norm 9,600 + fc 513,000. The hand count above must be its conv part.
    assert_eq!(CONV_WEIGHTS, 11_166_912);
    assert_eq!(CONV_WEIGHTS + 9_600 + 512 * 1000 + 1000, 11_689_512);
}

#[test]
fn dry_run_splits_two_cores() {
    let p = json_of(&[
        "plan",
        &fixture(),
        "--cores",
        "2",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(p["schema"], "profilednn.plan.v2");
    assert_eq!(p["logged_batch"], 8);
    assert_eq!(p["global_batch"], 8);
    assert_eq!(p["replayed"], false);
    let g = CONV_WEIGHTS * 4;
    assert_eq!(p["footprint"]["gradient_bytes"], g);
    assert_eq!(p["footprint"]["backward_weights_calls"], 20);
    let act = CONV_OUTPUTS_PER_SAMPLE * 8 * 4;
    assert_eq!(p["footprint"]["activation_bytes"], act);
    let names: Vec<&str> = p["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["split"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["1x2", "2x1"]);
    let one = row(&p, "1x2");
    assert_eq!(one["per_rank_batch"], 8);
    assert_eq!(one["allreduce_bytes_per_rank"], 0);
    assert_eq!(one["memory_bytes_per_rank"], 2 * g + act);
    let two = row(&p, "2x1");
    assert_eq!(two["per_rank_batch"], 4);
    // Ring over 2 ranks: 2·(2−1)/2 = all of G per rank, at the default 0.6 GB/s per rank.
    assert_eq!(two["allreduce_bytes_per_rank"], g);
    let ms = two["allreduce_ms"].as_f64().unwrap();
    assert!((ms - g as f64 / 0.6e9 * 1e3).abs() < 1e-9, "{ms}");
    assert_eq!(two["memory_bytes_per_rank"], 2 * g + act / 2);
    assert!(two["compute_ms"].is_null() && two["total_ms"].is_null());
    assert!(p["allreduce_source"]
        .as_str()
        .unwrap()
        .starts_with("assumed default"));
}

#[test]
fn invalid_splits_and_why() {
    // 3 cores: batch 8 is not divisible by 3 ranks.
    let p = json_of(&[
        "plan",
        &fixture(),
        "--cores",
        "3",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(row(&p, "1x3")["invalid"].as_array().unwrap().len(), 0);
    assert_eq!(
        row(&p, "3x1")["invalid"][0],
        "global batch 8 not divisible by 3 ranks"
    );
    // 2 sockets of 4 cores: one rank of 8 threads spans them; 8 ranks of batch 1 are fine.
    let p = json_of(&[
        "plan",
        &fixture(),
        "--cores",
        "8",
        "--sockets",
        "2",
        "--no-replay",
        "--format",
        "json",
    ]);
    assert_eq!(
        row(&p, "1x8")["invalid"][0],
        "a rank of 8 threads spans sockets (4 cores per socket)"
    );
    for s in ["2x4", "4x2", "8x1"] {
        assert_eq!(row(&p, s)["invalid"].as_array().unwrap().len(), 0, "{s}");
    }
    assert_eq!(row(&p, "8x1")["per_rank_batch"], 1);
    // A log of 2 ranks: global batch 16.
    let p = json_of(&[
        "plan",
        &fixture(),
        "--cores",
        "2",
        "--log-ranks",
        "2",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(p["global_batch"], 16);
    assert_eq!(row(&p, "2x1")["per_rank_batch"], 8);
}

#[test]
fn table_names_the_bandwidth_and_invalid_rows() {
    let out = bin()
        .args(["plan", &fixture(), "--cores", "3", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("INVALID: global batch 8 not divisible by 3 ranks"),
        "{text}"
    );
    assert!(text.contains("assumed default"), "{text}");
    assert!(text.contains("42.60 MiB"), "{text}");
}

#[test]
fn machine_profile_gives_the_sockets() {
    // A hand-built profile of a 2-socket machine: one rank of 8 threads would span them.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let m = dir.join("plan-two-sockets.json");
    std::fs::write(
        &m,
        r#"{"name":"two sockets","peak_gflops":{"f32":100.0},"memory_gbps":50.0,"sockets":2}"#,
    )
    .unwrap();
    let m = m.display().to_string();
    let f = fixture();
    let args = ["plan", &f, "--cores", "8", "--machine", &m, "--dry-run"];
    let p = json_of(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(p["sockets"], 2);
    assert_eq!(
        row(&p, "1x8")["invalid"][0],
        "a rank of 8 threads spans sockets (4 cores per socket)"
    );
    // --sockets wins over the profile.
    let p = json_of(&[&args[..], &["--sockets", "1", "--format", "json"]].concat());
    assert_eq!(p["sockets"], 1);
    assert_eq!(row(&p, "1x8")["invalid"].as_array().unwrap().len(), 0);
}

/// The real runs of `fixtures/multirank/train_ddp_even.py` (ResNet-18 64×64, global batch 16):
/// 1 rank × 2 threads and 2 ranks × 1 thread. The figures below are derived by hand from the
/// logs' timestamps by `fixtures/multirank/outside_by_hand.py`, which does not use profilednn.
fn even(name: &str) -> String {
    root()
        .join("fixtures/multirank")
        .join(name)
        .display()
        .to_string()
}

/// `plan ARGS --dry-run --format json`.
fn dry_plan(args: &[&str]) -> Value {
    json_of(&[&["plan"], args, &["--dry-run", "--format", "json"]].concat())
}

/// Steady iterations' median time outside oneDNN (mean over ranks), ms, by hand.
const OUTSIDE_1X2: f64 = 67.08179505687498;
const OUTSIDE_2X1: f64 = 136.70941760187497;
/// oneDNN time of the same iterations, ms, by hand.
const ONEDNN_1X2: f64 = 98.7592895;
const ONEDNN_2X1: f64 = 173.52959607000003;

#[test]
fn even_runs_outside_time_and_all_reduce_by_hand() {
    let single = even("even_1x2.log.gz");
    let p = dry_plan(&[&single, "--cores", "2"]);
    let g = CONV_WEIGHTS * 4;
    assert_eq!(p["footprint"]["gradient_bytes"], g);
    assert_eq!(p["global_batch"], 16);
    assert_eq!(row(&p, "1x2")["per_rank_batch"], 16);
    assert_eq!(row(&p, "2x1")["per_rank_batch"], 8);
    assert_eq!(p["outside"]["logged_threads"], 2);
    assert_eq!(p["outside"]["logged_batch"], 16);
    assert_eq!(p["outside"]["steady_iterations"], 3);
    let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-6;
    assert!(
        close(&p["outside"]["logged_ms"], OUTSIDE_1X2),
        "{}",
        p["outside"]
    );
    assert!(close(&p["outside"]["logged_onednn_ms"], ONEDNN_1X2));
    // Both splits keep 8 samples per thread: the outside time is carried unchanged.
    for s in ["1x2", "2x1"] {
        assert!(close(&row(&p, s)["outside_ms"], OUTSIDE_1X2), "{s}");
    }
    // The all-reduce measured from the 2-rank run: the extra outside time is 2x1's all-reduce
    // of all of G per rank.
    let multi = even("even_2x1.log.gz");
    let p = dry_plan(&[&single, "--cores", "2", "--allreduce-log", &multi]);
    let exposed = OUTSIDE_2X1 - OUTSIDE_1X2;
    let gbps = g as f64 / (exposed * 1e-3) / 1e9;
    assert!(
        close(&p["allreduce_gbps"], gbps),
        "{} vs {gbps}",
        p["allreduce_gbps"]
    );
    assert!(close(&row(&p, "2x1")["allreduce_ms"], exposed));
    assert!(p["allreduce_source"]
        .as_str()
        .unwrap()
        .starts_with("measured"));
    // An explicit rate: G at 2 GB/s.
    let p = dry_plan(&[&single, "--cores", "2", "--allreduce-gbps", "2"]);
    assert!(close(&row(&p, "2x1")["allreduce_ms"], g as f64 / 2e9 * 1e3));
    // The 2-rank log planned itself: its outside time less its own all-reduce at the default
    // rate, and the batch of its two ranks.
    let p = dry_plan(&[&multi, "--cores", "2"]);
    assert_eq!(p["logged_rank_batches"], serde_json::json!([8, 8]));
    let own = g as f64 / 0.6e9 * 1e3;
    assert!(close(&p["outside"]["logged_ms"], OUTSIDE_2X1));
    assert!(close(&p["outside"]["logged_onednn_ms"], ONEDNN_2X1));
    assert!(close(&p["outside"]["logged_allreduce_ms"], own));
    assert!(close(&row(&p, "2x1")["outside_ms"], OUTSIDE_2X1 - own));
    // Refused: a multi-rank LOG with --allreduce-log, a single-rank --allreduce-log.
    let e = refused(&[
        &multi,
        "--cores",
        "2",
        "--allreduce-log",
        &multi,
        "--dry-run",
    ]);
    assert!(e.contains("single-rank LOG"), "{e}");
    let e = refused(&[
        &single,
        "--cores",
        "2",
        "--allreduce-log",
        &single,
        "--dry-run",
    ]);
    assert!(e.contains("2 or more ranks"), "{e}");
}

/// `fixtures/multirank/train_ddp.py` under torchrun: 2 ranks, rank 0 at batch 16, rank 1 (the
/// straggler) at 32. oneDNN ran its two convolutions, with bias: 3→16 3×3 and 16→32 3×3.
#[test]
fn multi_rank_log_gives_its_ranks_and_batches() {
    let g = (3 * 16 * 9 + 16 + 16 * 32 * 9 + 32) * 4;
    // Outputs per sample: 16×32×32 and 32×16×16 f32, at rank 0's batch 16.
    let act = (16 * 32 * 32 + 32 * 16 * 16) * 4 * 16;
    for log in [
        "fixtures/multirank/torchrun_2ranks.log.gz",
        "fixtures/multirank/torchrun_log_dir",
    ] {
        let log = root().join(log).display().to_string();
        let p = dry_plan(&[&log, "--cores", "2"]);
        assert_eq!(p["logged_ranks"], 2, "{log}");
        assert_eq!(
            p["logged_rank_batches"],
            serde_json::json!([16, 32]),
            "{log}"
        );
        assert_eq!(p["global_batch"], 48, "{log}");
        assert_eq!(p["footprint"]["gradient_bytes"], g, "{log}");
        assert_eq!(p["footprint"]["activation_bytes"], act, "{log}");
        assert_eq!(row(&p, "1x2")["per_rank_batch"], 48);
        assert_eq!(row(&p, "2x1")["per_rank_batch"], 24);
        // Activations scale from rank 0's batch 16 to 24.
        assert_eq!(
            row(&p, "2x1")["memory_bytes_per_rank"],
            2 * g + act / 16 * 24
        );
        let e = refused(&[&log, "--cores", "2", "--log-ranks", "3", "--dry-run"]);
        assert!(e.contains("holds 2 ranks"), "{e}");
    }
}

/// A labelled log is planned as it streams, rank by rank (each rank's steady iteration cut
/// from its own lines): the plan of the torchrun `--log-dir` tree's two rank files, read
/// apart, is the plan of the same lines labelled and interleaved in one log, plain (mapped)
/// and gzip (streamed), rank 1's lines first and the two ranks' lines in uneven runs.
#[test]
fn labelled_log_plans_as_its_ranks_files() {
    let dir = root().join("fixtures/multirank/torchrun_log_dir");
    let attempt = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let lines = |rank: u32| -> Vec<String> {
        let path = attempt.join(format!("attempt_0/{rank}/stdout.log.gz"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        text.lines()
            .map(|l| format!("[rank{rank}]:{l}\n"))
            .collect()
    };
    let (r0, r1) = (lines(0), lines(1));
    let (mut i0, mut i1, mut labelled) = (0, 0, String::new());
    for k in 0.. {
        if i0 == r0.len() && i1 == r1.len() {
            break;
        }
        for _ in 0..1 + k % 3 {
            if let Some(l) = r1.get(i1) {
                labelled.push_str(l);
                i1 += 1;
            }
        }
        for _ in 0..1 + (k * 7) % 5 {
            if let Some(l) = r0.get(i0) {
                labelled.push_str(l);
                i0 += 1;
            }
        }
    }
    let tmp = temp_dir();
    let plain = tmp.join("labelled.log");
    std::fs::write(&plain, &labelled).unwrap();
    let gz = tmp.join("labelled.log.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut enc, labelled.as_bytes()).unwrap();
    enc.finish().unwrap();
    let without_source = |mut v: Value| {
        v.as_object_mut().unwrap().remove("source");
        v
    };
    let apart = without_source(dry_plan(&[&dir.display().to_string(), "--cores", "2"]));
    assert_eq!(apart["logged_rank_batches"], serde_json::json!([16, 32]));
    for log in [plain, gz] {
        let together = without_source(dry_plan(&[&log.display().to_string(), "--cores", "2"]));
        assert_eq!(together, apart, "{}", log.display());
    }
}

/// The stderr of `plan` with `args`, which must fail.
fn refused(args: &[&str]) -> String {
    failed(bin().arg("plan").args(args).output().unwrap())
}

#[test]
fn refusals_say_what_to_do() {
    let f = fixture();
    let e = refused(&[&f, "--cores", "8", "--sockets", "3", "--dry-run"]);
    assert!(e.contains("not divisible by 3 sockets"), "{e}");
    let e = refused(&["-", "--cores", "2"]);
    assert!(e.contains("needs a file"), "{e}");
    let e = refused(&[
        &f,
        "--cores",
        "2",
        "--dnnl-lib",
        "/nonexistent/libdnnl.so.3",
    ]);
    assert!(e.contains("--dry-run"), "{e}");
}

/// One rank of each split replayed through oneDNN: 1 rank × 2 threads at batch 8 and 2 ranks ×
/// 1 thread at batch 4. The times are indicative only on a shared machine; the test checks the
/// figures are there and add up, not their values.
#[test]
fn replayed_plan_of_two_cores() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let p = json_of(&[
        "plan",
        &fixture(),
        "--cores",
        "2",
        "--dnnl-lib",
        &lib,
        "--warmup",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(p["replayed"], true);
    let mut best = 0.0f64;
    for (s, b) in [("1x2", 8), ("2x1", 4)] {
        let r = row(&p, s);
        assert_eq!(r["per_rank_batch"], b, "{s}");
        let c = r["compute_ms"].as_f64().unwrap();
        let t = r["total_ms"].as_f64().unwrap();
        assert!(c > 0.0, "{s}: {r}");
        let parts =
            c + r["allreduce_ms"].as_f64().unwrap() + r["outside_ms"].as_f64().unwrap_or(0.0);
        assert!((t - parts).abs() < 1e-9, "{s}: {r}");
        assert_eq!(r["notes"].as_array().unwrap().len(), 0, "{s}: {r}");
        best = best.max(r["relative_throughput"].as_f64().unwrap());
    }
    assert_eq!(best, 1.0);
}

/// Two nodes (issue 40 item 4): each of the 2-rank run's ranks made a node's log, as if the run
/// had crossed a network; the 1-rank run planned onto 2 nodes of 1 core.
#[test]
fn two_nodes_price_the_network() {
    let single = even("even_1x2.log.gz");
    let g = (CONV_WEIGHTS * 4) as f64;
    let p = dry_plan(&[
        &single,
        "--nodes",
        "2",
        "--cores",
        "1",
        "--network-gbps",
        "1",
    ]);
    let r = row(&p, "1x1");
    assert_eq!(
        (r["world_ranks"].as_u64(), r["per_rank_batch"].as_u64()),
        (Some(2), Some(8))
    );
    // One rank per node: G crosses the 1 Gbit/s link, all of it the network's.
    let close = |a: &Value, b: f64| (a.as_f64().unwrap() - b).abs() < 1e-6 * b.max(1.0);
    assert!(close(&r["allreduce_ms"], g * 8.0 / 1e9 * 1e3), "{r}");
    assert!(
        close(&r["allreduce_network_ms"], g * 8.0 / 1e9 * 1e3),
        "{r}"
    );
    // 8 samples per thread as logged (16 on 2 threads): carried.
    assert!(close(&r["outside_ms"], OUTSIDE_1X2), "{r}");
    assert_eq!(
        (p["nodes"].as_u64(), p["network_gbps"].as_f64()),
        (Some(2), Some(1.0))
    );
    let e = refused(&[&single, "--nodes", "2", "--cores", "1", "--dry-run"]);
    assert!(e.contains("--network-gbps"), "{e}");
    // The network measured from node logs: the 2-rank run's ranks, one log each.
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(even("even_2x1.log.gz")).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    let dir = temp_dir();
    let nodes: Vec<String> = (0..2)
        .map(|k| {
            let own: String = s
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("[default{k}]:")))
                .map(|t| format!("[default0]:{t}\n"))
                .collect();
            let path = dir.join(format!("node{k}.log"));
            std::fs::write(&path, own).unwrap();
            path.display().to_string()
        })
        .collect();
    let args = [&single, "--nodes", "2", "--cores", "1", "--network-log"];
    let p = dry_plan(&[&args[..], &[&nodes[0], &nodes[1]]].concat());
    // The 1-rank log has no all-reduce of its own: the exposed time is the difference of the
    // hand-derived outside times, G · 8 bits over it.
    let gbit = g * 8.0 / ((OUTSIDE_2X1 - OUTSIDE_1X2) * 1e-3) / 1e9;
    assert!(
        close(&p["network_gbps"], gbit),
        "{} vs {gbit}",
        p["network_gbps"]
    );
    assert!(close(
        &row(&p, "1x1")["allreduce_ms"],
        OUTSIDE_2X1 - OUTSIDE_1X2
    ));
    assert!(p["network_source"]
        .as_str()
        .unwrap()
        .starts_with("measured"));
}

/// `--torch-trace`: the GPT fixture (batch 4, f32 Linear layers in the BLAS, so the log holds
/// GELUs only) planned by its trace: the batch is the tensors' 4, the gradients the model's
/// 536,064 f32 parameters counted by hand (`crates/analysis/tests/step_units.rs`), and the
/// 2 × 1 split's ring moves 2·(2−1)/2 of them at the default 0.6 GB/s per rank.
#[test]
fn whole_step_plan_takes_the_batch_and_gradients_from_the_trace() {
    let t = |f: &str| root().join("fixtures/torch").join(f).display().to_string();
    let p = dry_plan(&[
        &t("gpt-f32.log.gz"),
        "--cores",
        "2",
        "--torch-trace",
        &t("gpt-f32.trace.json.gz"),
    ]);
    assert_eq!(p["global_batch"], 4);
    assert_eq!(p["footprint"]["gradient_bytes"], 4 * 536_064);
    let ws = &p["whole_step"];
    assert_eq!(ws["recorded_batch"], 4);
    assert_eq!(ws["gradient_tensors"], 37);
    assert!(ws["torch"].is_null(), "a dry run replays nothing");
    assert_eq!(row(&p, "2x1")["per_rank_batch"], 2);
    let ar = row(&p, "2x1")["allreduce_ms"].as_f64().unwrap();
    let by_hand = 4.0 * 536_064.0 / 0.6e9 * 1e3;
    assert!((ar - by_hand).abs() < 1e-6, "{ar} vs {by_hand}");
    assert!(
        p["outside"].is_null(),
        "the outside is the replayed step's, not the log's"
    );
    // Without the trace, the same log has no mini-batch to plan.
    let e = refused(&[&t("gpt-f32.log.gz"), "--cores", "2", "--dry-run"]);
    assert!(
        e.contains("the mini-batch, and so the global batch, is unknown"),
        "{e}"
    );
    // A multi-rank log is refused with the trace.
    let e = refused(&[
        &even("even_2x1.log.gz"),
        "--cores",
        "2",
        "--dry-run",
        "--torch-trace",
        &t("gpt-f32.trace.json.gz"),
    ]);
    assert!(
        e.contains("--torch-trace plans from one process's run"),
        "{e}"
    );
}

/// A log without a single oneDNN line (the compiled GPT: its work in Inductor's kernels and
/// the BLAS) plans from its trace alone: the same parameter count as the eager GPT of the same
/// shape (2 layers, d = 128: 37 tensors), the batch its tensors give. Without the trace the log
/// has nothing to plan, and says why.
#[test]
fn whole_step_plan_of_a_log_without_onednn_lines() {
    let t = |f: &str| root().join("fixtures/torch").join(f).display().to_string();
    let p = dry_plan(&[
        &t("gpt-compiled.log.gz"),
        "--cores",
        "2",
        "--torch-trace",
        &t("gpt-compiled.trace.json.gz"),
    ]);
    assert_eq!(p["whole_step"]["gradient_tensors"], 37);
    assert_eq!(p["footprint"]["gradient_bytes"], 4 * 536_064);
    assert!(p["global_batch"].as_u64().unwrap() > 0);
    assert_eq!(p["rows"].as_array().unwrap().len(), 2);
    let e = refused(&[&t("gpt-compiled.log.gz"), "--cores", "2", "--dry-run"]);
    assert!(e.contains("no oneDNN verbose line found"), "{e}");
}
