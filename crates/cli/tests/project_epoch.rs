//! `project --to` with `--samples-per-epoch`, `--batch` and `--price-per-hour` (issue 54): the
//! epoch's time and cost per target, cheapest first. The arithmetic is checked by hand from each
//! target's projected step: steps = ⌈samples / batch⌉, epoch = steps × step, cost = epoch in
//! hours × price.

mod common;
use common::{bin, failed, json_of, root};

fn p(rel: &str) -> String {
    root().join(rel).display().to_string()
}

#[test]
fn each_target_gets_its_epoch_and_cost_cheapest_first() {
    let (log, trace) = (
        p("fixtures/torch/gpt-bf16.log.gz"),
        p("fixtures/torch/gpt-bf16.trace.json.gz"),
    );
    let (from, xeon, spec) = (
        p("machines/epyc-zen4-25-17/profile.json"),
        p("machines/xeon-6-167-amx/profile.json"),
        p("fixtures/machine/xeon-8480-spec.json"),
    );
    // The spec-sheet box priced first and dearer: the cheaper Xeon must come out first.
    let j = json_of(&[
        "project",
        &log,
        "--torch-trace",
        &trace,
        "--from",
        &from,
        "--to",
        &spec,
        "--to",
        &xeon,
        "--samples-per-epoch",
        "100001",
        "--batch",
        "4",
        "--price-per-hour",
        "30",
        "--price-per-hour",
        "1.2",
        "--format",
        "json",
    ]);
    let t = j["targets"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    let steps = (100001f64 / 4.0).ceil();
    let mut costs = vec![];
    for (target, price) in [(&t[0], 1.2), (&t[1], 30.0)] {
        let e = &target["epoch"];
        let step = target["projected_step_ms"].as_f64().unwrap();
        assert_eq!(e["steps"].as_f64().unwrap(), steps);
        let secs = steps * step / 1e3;
        assert!(
            (e["epoch_s"].as_f64().unwrap() - secs).abs() < 1e-6 * secs,
            "{e}"
        );
        // The band's low end may be 0 (a band of ±100 % or more).
        let low = steps * target["band"]["low_ms"].as_f64().unwrap() / 1e3;
        assert!(
            (e["epoch_s_low"].as_f64().unwrap() - low).abs() <= 1e-6 * low.max(1.0),
            "{e}"
        );
        let cost = secs / 3600.0 * price;
        assert_eq!(e["price_per_hour"].as_f64().unwrap(), price);
        assert!(
            (e["cost"].as_f64().unwrap() - cost).abs() < 1e-9 * cost.max(1.0),
            "{e}"
        );
        costs.push(cost);
    }
    assert!(costs[0] <= costs[1], "cheapest first: {costs:?}");
    assert!(t[0]["profile"]
        .as_str()
        .unwrap()
        .ends_with("xeon-6-167-amx/profile.json"));
}

#[test]
fn an_epoch_request_that_cannot_be_priced_is_refused() {
    let (log, from, xeon) = (
        p("fixtures/torch/gpt-bf16.log.gz"),
        p("machines/epyc-zen4-25-17/profile.json"),
        p("machines/xeon-6-167-amx/profile.json"),
    );
    let base = ["project", &log, "--from", &from, "--to", &xeon];
    for (extra, want) in [
        (
            vec!["--samples-per-epoch", "1000"],
            "--samples-per-epoch needs --batch",
        ),
        (
            vec![
                "--samples-per-epoch",
                "1000",
                "--batch",
                "4",
                "--price-per-hour",
                "1",
                "--price-per-hour",
                "2",
            ],
            "given 2 time(s) for 1 --to target(s)",
        ),
        (
            vec!["--price-per-hour", "1"],
            "needs --samples-per-epoch and --batch",
        ),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let err = failed(bin().args(&args).output().unwrap());
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
