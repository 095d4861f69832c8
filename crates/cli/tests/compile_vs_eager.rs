//! End-to-end: `advise --against`, a BERT-style encoder (4 layers, d 256, seq 128, batch 8,
//! AdamW) recorded eager and compiled with `record --torch` (`fixtures/torch/bert-*`). The
//! verdict is checked against the script's own step times (its printed `iteration i: …, X ms`
//! lines, kept beside the recordings), never against the tool's figures.

mod common;
use common::{json_of, repo};
use serde_json::Value;

/// The median, lowest and highest of the script's own step times over its steady iterations
/// (the first third left out, rounded up, as the tool leaves it out of a log's markers).
fn script_step_ms(stdout: &str) -> (f64, f64, f64) {
    let text = std::fs::read_to_string(repo(stdout)).unwrap();
    let times: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("iteration "))
        .map(|l| {
            let ms = l.rsplit(", ").next().unwrap().trim_end_matches(" ms");
            ms.parse().unwrap()
        })
        .collect();
    let mut steady = times[times.len().div_ceil(3)..].to_vec();
    steady.sort_by(f64::total_cmp);
    let n = steady.len();
    let median = if n % 2 == 1 {
        steady[n / 2]
    } else {
        (steady[n / 2 - 1] + steady[n / 2]) / 2.0
    };
    (median, steady[0], steady[n - 1])
}

fn advise(this: &str, twin: &str) -> Value {
    let (log, trace) = (
        repo(&format!("fixtures/torch/bert-{this}.log.gz")),
        repo(&format!("fixtures/torch/bert-{this}.trace.json.gz")),
    );
    let (tlog, ttrace) = (
        repo(&format!("fixtures/torch/bert-{twin}.log.gz")),
        repo(&format!("fixtures/torch/bert-{twin}.trace.json.gz")),
    );
    json_of(&[
        "advise",
        &log,
        "--torch-trace",
        &trace,
        "--against",
        &tlog,
        &ttrace,
        "--format",
        "json",
    ])
}

fn finding<'a>(advice: &'a Value, id: &str) -> Option<&'a Value> {
    advice["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
}

#[test]
fn advise_says_which_of_eager_and_compiled_is_faster_as_the_script_measured_it() {
    let (eager, e_lo, e_hi) = script_step_ms("fixtures/torch/bert-eager.stdout.txt");
    let (compiled, c_lo, c_hi) = script_step_ms("fixtures/torch/bert-compiled.stdout.txt");
    let faster = if compiled < eager {
        "compiled"
    } else {
        "eager"
    };
    // A tie by the script's own clock: each median within the other's steady steps.
    let tie = (c_lo..=c_hi).contains(&eager) && (e_lo..=e_hi).contains(&compiled);
    for (this, twin) in [("compiled", "eager"), ("eager", "compiled")] {
        let a = advise(this, twin);
        let f = finding(&a, "compile-vs-eager").expect("compile-vs-eager fires");
        let ev = &f["evidence"];
        assert_eq!(ev["faster"], faster, "{this}: {f}");
        assert_eq!(ev["tie"], tie, "{this}: {f}");
        assert_eq!(ev["this_run"], this);
        // The tool's steps are the trace's iteration ranges, the script's are its own clock
        // around the same loop body: within 10 %.
        let (e, c) = (
            ev["eager_step_ms"].as_f64().unwrap(),
            ev["compiled_step_ms"].as_f64().unwrap(),
        );
        assert!((e / eager - 1.0).abs() < 0.10, "eager {e} against {eager}");
        assert!(
            (c / compiled - 1.0).abs() < 0.10,
            "compiled {c} against {compiled}"
        );
        let title = f["title"].as_str().unwrap();
        let verdict = if tie {
            "the compiled and the eager step are a tie".to_string()
        } else {
            format!(
                "the compiled step is {:.2}x {}",
                if faster == "compiled" { e / c } else { c / e },
                if faster == "compiled" {
                    "faster"
                } else {
                    "slower"
                }
            )
        };
        assert!(title.starts_with(&verdict), "{title}");
        // The why: Inductor's kernels against the eager ops they took over, and the phases.
        assert!(ev["fused_kernels"].as_u64().unwrap() > 0, "{f}");
        assert!(
            title.contains("Inductor's") && title.contains("by phase:"),
            "{title}"
        );
        // The gain is the change to the twin's way, only when it pays measurably.
        let pays = this != faster && !tie;
        assert_eq!(f["gain_ms"].is_number(), pays, "{this}: {f}");
        if pays {
            assert!(f["gain_ms"].as_f64().unwrap() > 0.0);
        }
    }
}

#[test]
fn two_compiled_runs_are_not_a_pair() {
    let a = advise("compiled", "compiled");
    assert!(finding(&a, "compile-vs-eager").is_none());
    let why = a["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "compile-vs-eager")
        .unwrap()["why_not"]
        .to_string();
    assert!(why.contains("both runs compiled"), "{why}");
}

/// gpt-f32 was profiled with Python stacks (the eager default), gpt-compiled without: the
/// verdict is given with the caveat, and no gain is drawn from the pair.
#[test]
fn runs_profiled_differently_are_said_to_be_unlike_and_give_no_gain() {
    let f = |n: &str| repo(&format!("fixtures/torch/{n}"));
    let a = json_of(&[
        "advise",
        &f("gpt-compiled.log.gz"),
        "--torch-trace",
        &f("gpt-compiled.trace.json.gz"),
        "--against",
        &f("gpt-f32.log.gz"),
        &f("gpt-f32.trace.json.gz"),
        "--format",
        "json",
    ]);
    let f = finding(&a, "compile-vs-eager").expect("compile-vs-eager fires");
    assert_eq!(f["evidence"]["like_with_like"], false, "{f}");
    assert!(f["gain_ms"].is_null(), "{f}");
    let title = f["title"].as_str().unwrap();
    assert!(
        title.contains("not like with like: the eager run was profiled with Python stacks"),
        "{title}"
    );
    // The BERT pair, both recorded without them, is like with like.
    let b = advise("compiled", "eager");
    assert_eq!(
        finding(&b, "compile-vs-eager").unwrap()["evidence"]["like_with_like"],
        true
    );
}
