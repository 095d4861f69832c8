//! Several logs at once: per-iteration figures are per log, and the merged view says what it
//! divides by. Long iteration lists are summarised. References are computed from the log text.

mod common;
use common::{bin, gunzip, root, temp_dir};

/// oneDNN time of each iteration, between consecutive `profilednn,iteration,N` markers.
fn naive_iterations(text: &str) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    let mut cur: Option<f64> = None;
    for l in text.lines() {
        if l.starts_with("profilednn,iteration,") {
            if let Some(c) = cur {
                out.push(c);
            }
            cur = Some(0.0);
        } else if l.starts_with("onednn_verbose,") && l.contains(",exec,") {
            if let Some(c) = cur.as_mut() {
                *c += l.rsplit(',').next().unwrap().parse::<f64>().unwrap();
            }
        }
    }
    out
}

fn total(text: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with("onednn_verbose,") && l.contains(",exec,"))
        .map(|l| l.rsplit(',').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

fn stdout(args: &[&str]) -> String {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn several_logs_per_iteration_figures_are_per_log() {
    let a = root().join("fixtures/torch/reference.log.gz");
    let b = root().join("fixtures/torch/fused.log.gz");
    let (ta, tb) = (gunzip(&a), gunzip(&b));
    let (ia, ib) = (naive_iterations(&ta), naive_iterations(&tb));
    assert_eq!((ia.len(), ib.len()), (4, 4));
    let out = stdout(&["report", a.to_str().unwrap(), b.to_str().unwrap()]);
    // Each log: its own mean and its own iterations.
    for (path, it) in [(&a, &ia), (&b, &ib)] {
        let mean = it.iter().sum::<f64>() / it.len() as f64;
        let line = format!(
            "{}: 4 iterations (from marker lines), {:.3} ms per iteration",
            path.to_str().unwrap(),
            mean
        );
        assert!(out.contains(&line), "missing «{line}» in\n{out}");
        let each: Vec<String> = it.iter().map(|v| format!("{v:.3}")).collect();
        let line = format!("per iteration: {} ms", each.join(", "));
        assert!(out.contains(&line), "missing «{line}» in\n{out}");
    }
    // The merged view: both logs' time over the common count, and it says so.
    let merged = (total(&ta) + total(&tb)) / 4.0;
    let line = format!(
        "{merged:.1} ms of oneDNN time per iteration = the 2 logs' time summed (as ranks running \
         side by side), divided by 4"
    );
    assert!(out.contains(&line), "missing «{line}» in\n{out}");

    // Different counts (4 marked vs 3 detected): no merged per-iteration figure.
    let c = root().join("fixtures/advice/bf16_without_bf16_units.log");
    let out = stdout(&["report", a.to_str().unwrap(), c.to_str().unwrap()]);
    assert!(
        out.contains("Iterations differ between the logs: no per-iteration figure"),
        "{out}"
    );
    assert!(!out.contains("ms/iter"), "{out}");
    let mean_c = total(&std::fs::read_to_string(&c).unwrap()) / 3.0;
    let line = format!(
        "3 iterations (detected from the repeating call pattern), {mean_c:.3} ms per iteration"
    );
    assert!(out.contains(&line), "missing «{line}» in\n{out}");
}

/// 1201 iterations: one line of 1201 numbers is no summary. With more than ten, the line gives
/// first, median, last, min and max. Iteration k (1-based) takes 1 ms + k µs, so by hand:
/// first 1.001, median (k = 601) 1.601, last = max 2.201, min 1.001.
#[test]
fn many_iterations_are_summarised() {
    let mut log = String::from("onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e)\n");
    for k in 1..=1201u32 {
        log.push_str(&format!("profilednn,iteration,{}\n", k - 1));
        let ms = 1.0 + k as f64 / 1000.0;
        log.push_str(&format!(
            "onednn_verbose,exec,cpu,eltwise,jit:avx512_core,forward_training,\
             data_f32::blocked:ab::f0 diff_undef::undef:::,,alg:eltwise_relu alpha:0 beta:0,8x16,{ms}\n"
        ));
    }
    log.push_str("profilednn,iteration,1201\n");
    let dir = temp_dir();
    let p = dir.join("many.log");
    std::fs::write(&p, log).unwrap();
    let out = stdout(&["report", p.to_str().unwrap()]);
    let line = "per iteration: 1201 values: first 1.001, median 1.601, last 2.201, min 1.001, max 2.201 ms";
    assert!(out.contains(line), "missing «{line}» in\n{out}");
    assert!(out.lines().all(|l| l.chars().count() < 400), "{out}");
}
