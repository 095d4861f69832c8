//! A what-if's weight reorders write the layout the rewritten convolution reads. Checked against
//! oneDNN's own account of the replay (its verbose lines): every bf16 weight reorder's
//! destination tag is the weights tag of the convolution that reads it next (forward or
//! backward-data: the latter chooses a transposed layout, e.g. `ABcd8a16b2a`). Before the fix
//! the reorders kept the logged f32 blocked layout (`ABcd16b16a`) while oneDNN ran the bf16
//! convolutions with `ABcd8b16a2b` on an AVX-512 CPU. The rebuilt reorders keep their
//! attributes: they were once created with none, so oneDNN allocated their scratchpad inside
//! the timed call (its verbose line then lacks `attr-scratchpad:user`).

mod common;
use common::{bin, dnnl_lib_or_skip, root, succeeded, temp_dir};

/// The number after `key` in a oneDNN problem string (`ic64oc64…` → `ic` → 64).
fn after(problem: &str, key: &str) -> Option<u64> {
    let i = problem.find(key)? + key.len();
    let digits: String = problem[i..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The layout tag of the argument `arg` (`wei`, `dst`) of a verbose exec line's descriptors.
fn tag(mds: &str, arg: &str) -> Option<String> {
    let md = mds.split(' ').find(|m| m.starts_with(&format!("{arg}_")))?;
    md.split(':').nth(3).map(str::to_string)
}

/// `replay` of the f32 NCHW what-if fixture with `what_if` at 1 thread, oneDNN verbose on: the
/// results file and oneDNN's exec lines (as printed, to be split on commas).
fn replay_verbose(lib: &str, what_if: &[&str]) -> (serde_json::Value, Vec<String>) {
    let out = temp_dir().join("what_if.json");
    let run = succeeded(
        bin()
            .args(["replay"])
            .arg(root().join("fixtures/whatif/f32-nchw.log.gz"))
            .args(what_if)
            .args(["--threads", "1", "--dnnl-lib", lib, "--no-progress", "-o"])
            .arg(&out)
            .env("ONEDNN_VERBOSE", "1")
            .output()
            .unwrap(),
    );
    let r = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let execs = String::from_utf8_lossy(&run.stdout)
        .lines()
        .filter(|l| l.starts_with("onednn_verbose,exec,cpu,"))
        .map(str::to_string)
        .collect();
    (r, execs)
}

#[test]
fn bf16_weight_reorders_write_the_layout_the_convolution_reads_and_keep_their_attributes() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let (r, lines) = replay_verbose(&lib, &["--as", "bf16", "--layout", "channels-last"]);
    if !common::onednn_has_bf16(&r) {
        // No bf16 convolution is built here, so no reorder can be checked against one; what
        // can be checked: every convolution says why, naming the CPU's instruction set.
        for x in r["results"].as_array().unwrap() {
            if x["prim_kind"] == "convolution" {
                let why = x["skipped"]["message"].as_str().unwrap_or_default();
                assert!(why.contains("no bf16 implementation on this CPU"), "{x}");
            }
        }
        println!(
            "SKIPPED: oneDNN has no bf16 convolution at {} (this CPU): no weight reorder to check against one",
            r["onednn_isa"]
        );
        return;
    }
    let execs: Vec<Vec<&str>> = lines.iter().map(|l| l.split(',').collect()).collect();
    // Each bf16 → bf16 reorder into another layout, and the next convolution after it (the
    // call that reads it, forward or backward-data): when the reorder holds that convolution's
    // weights, it must write the layout the convolution reads.
    let mut checked = 0;
    for (i, f) in execs.iter().enumerate() {
        let (dims, mds) = (f[f.len() - 2], f[6]);
        if f[3] != "reorder" || !mds.contains("src_bf16") || !mds.contains("dst_bf16") {
            continue;
        }
        // Into a blocked layout (upper-case letters): a reorder to a plain layout is a
        // gradient going back to the framework, not weights going to a convolution.
        let dst = tag(mds, "dst").unwrap();
        if dst == tag(mds, "src").unwrap() || !dst.chars().any(|c| c.is_ascii_uppercase()) {
            continue;
        }
        let Some(conv) = execs[i + 1..].iter().find(|g| g[3] == "convolution") else {
            continue;
        };
        let p = conv[conv.len() - 2];
        let weights = ["oc", "ic", "kh", "kw"].map(|k| after(p, k).unwrap().to_string());
        if weights.join("x") != dims || conv[5] == "backward_weights" {
            continue;
        }
        assert_eq!(
            dst,
            tag(conv[6], "wei").unwrap(),
            "reorder {dims} before {} {p}: {mds}",
            conv[5]
        );
        // The rebuilt reorder keeps its builder's attributes, as every replayed primitive:
        // the user scratchpad the run passes (no allocation inside the timed call).
        assert!(
            f[7].contains("attr-scratchpad:user"),
            "rebuilt reorder {dims} lost its attributes: {}",
            f.join(",")
        );
        checked += 1;
    }
    assert!(checked > 0, "no bf16 weight reorder in the replay");
    assert!(r["sequence"]["weight_reorders_resolved"].as_u64().unwrap() > 0);
}

/// Regression (an AVX-512 log's what-if replayed on an AMD EPYC Zen 3, AVX2 only:
/// `--layout channels-last` projected 12× slower): the weight-gradient reorders kept the log's
/// blocked source (`ABcd16b16a`) while the backward-weights convolution here wrote another
/// layout (`cdba`), and oneDNN ran them with its generic `simple:any` reorder at ~350 ms per
/// call; worse, a gradient reorder was taken for a weight reorder of the next convolution of
/// the same dims and given that convolution's layout as destination. Now, from oneDNN's own
/// verbose lines: each reorder into a plain layout (the framework's) of a convolution's weight
/// dims that follows a backward-weights convolution of those dims reads the layout that
/// convolution wrote.
#[test]
fn weight_gradient_reorders_read_the_layout_the_convolution_wrote() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let (_, lines) = replay_verbose(&lib, &["--layout", "channels-last"]);
    let execs: Vec<Vec<&str>> = lines.iter().map(|l| l.split(',').collect()).collect();
    let blocked = |t: &str| t.chars().any(|c| c.is_ascii_uppercase());
    let mut checked = 0;
    for (i, f) in execs.iter().enumerate() {
        let (dims, mds) = (f[f.len() - 2], f[6]);
        if f[3] != "reorder" {
            continue;
        }
        let Some(conv) = execs[..i]
            .iter()
            .rev()
            .find(|g| g[3] != "reorder")
            .filter(|g| g[3] == "convolution" && g[5] == "backward_weights")
        else {
            continue;
        };
        let p = conv[conv.len() - 2];
        let weights = ["oc", "ic", "kh", "kw"].map(|k| after(p, k).unwrap().to_string());
        if weights.join("x") != dims {
            continue;
        }
        let (src, dst) = (tag(mds, "src").unwrap(), tag(mds, "dst").unwrap());
        if blocked(&dst) {
            // Weights into the library's layout for the next convolution, not a gradient.
            continue;
        }
        assert_eq!(
            src,
            tag(conv[6], "wei").unwrap(),
            "gradient reorder {dims} after {p}: {mds}"
        );
        checked += 1;
    }
    assert!(checked > 0, "no weight-gradient reorder in the replay");
    println!("{checked} weight-gradient reorders read the layout their convolution wrote");
}
