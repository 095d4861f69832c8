//! `advise`/`report --replay R.json` and `advise --project`: the projection-aware rules state
//! the figures `project` prints for the same files, worked out here by hand from the log text
//! and the replay JSON, and a change projected slower is not recommended.
//!
//! The replay files in `fixtures/whatif/replays/` are real what-if replays of
//! `fixtures/whatif/f32-nchw-1t.log.gz` (PyTorch 2.15 ResNet-18, 1 thread, 5 iterations,
//! recorded on a model-207 Xeon without bf16 units) on that machine with pip oneDNN 3.2, at 1
//! thread (see the README there): these tests need no oneDNN. The live test at the end does.

mod common;
use common::{bin, failed, json_of, root, succeeded};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;

const LOG: &str = "fixtures/whatif/f32-nchw-1t.log.gz";

fn path(rel: &str) -> String {
    root().join(rel).to_str().unwrap().to_string()
}

fn replay(name: &str) -> String {
    path(&format!("fixtures/whatif/replays/f32-nchw-1t.{name}.json"))
}

/// The log's steady-state oneDNN time per iteration, from its text: per problem (exec lines
/// alike but for timestamp, implementation and time) its calls × the median of its durations
/// after the first third of them in log order (rounded up: the warm-up; the upper middle one of
/// an even count), summed, over the iterations between its `profilednn,iteration,N` markers.
fn logged_per_iteration() -> f64 {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path(LOG)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut problems: BTreeMap<Vec<&str>, Vec<f64>> = BTreeMap::new();
    let mut markers = 0;
    for l in text.lines() {
        if l.starts_with("profilednn,iteration,") {
            markers += 1;
            continue;
        }
        let f: Vec<&str> = l.split(',').collect();
        // onednn_verbose,v1,TIMESTAMP,primitive,exec,cpu,KIND,IMPL,PROP,MDS,ATTRS,AUX,PROBLEM,TIME
        if f.len() == 14 && f[3] == "primitive" && f[4] == "exec" {
            let key = vec![f[6], f[8], f[9], f[10], f[11], f[12]];
            problems
                .entry(key)
                .or_default()
                .push(f[13].parse().unwrap());
        }
    }
    assert_eq!(markers, 6, "fixture changed");
    let total: f64 = problems
        .values_mut()
        .map(|v| {
            let calls = v.len();
            let warm = if calls < 2 { 0 } else { calls.div_ceil(3) };
            let mut steady = v[warm..].to_vec();
            steady.sort_by(f64::total_cmp);
            steady[steady.len() / 2] * calls as f64
        })
        .sum();
    total / (markers - 1) as f64
}

/// The log's time outside oneDNN per steady iteration, from its text: per
/// `profilednn,iteration,N` marker, the first primitive's timestamp after it to the next
/// marker's first, less the exec times between; a last marker with nothing after it opens no
/// iteration; the first third of the iterations (rounded up, at least one) and the last one,
/// which no marker ends, are left out; the median of the rest (the middle two's mean).
fn logged_outside_per_iteration() -> f64 {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path(LOG)).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    // Its only primitive lines are exec ones (project takes an iteration's first timestamp
    // from any primitive line; without create lines that is the first exec line's).
    assert!(!text.contains(",primitive,create"), "fixture changed");
    // Per marker: (first timestamp after it, exec ms after it).
    let mut marks: Vec<(Option<f64>, f64)> = Vec::new();
    for l in text.lines() {
        if l.starts_with("profilednn,iteration,") {
            marks.push((None, 0.0));
            continue;
        }
        let f: Vec<&str> = l.split(',').collect();
        if f.len() == 14 && f[3] == "primitive" && f[4] == "exec" {
            let m = marks.last_mut().unwrap();
            m.0.get_or_insert(f[2].parse().unwrap());
            m.1 += f[13].parse::<f64>().unwrap();
        }
    }
    while marks.last().is_some_and(|m| m.0.is_none()) {
        marks.pop();
    }
    let n = marks.len();
    assert_eq!(n, 5, "fixture changed");
    let warm = n.div_ceil(3).max(1);
    let mut outside: Vec<f64> = (warm..n - 1)
        .map(|i| marks[i + 1].0.unwrap() - marks[i].0.unwrap() - marks[i].1)
        .collect();
    outside.sort_by(f64::total_cmp);
    let m = outside.len() / 2;
    if outside.len() % 2 == 1 {
        outside[m]
    } else {
        (outside[m - 1] + outside[m]) / 2.0
    }
}

#[test]
fn time_outside_onednn_is_the_steady_iterations_median() {
    let (outside, logged) = (logged_outside_per_iteration(), logged_per_iteration());
    let p = json_of(&["project", &path(LOG), "--replay", &replay("cl"), "--json"]);
    println!(
        "outside oneDNN {outside:.3} ms per steady iteration, by hand; project: {}",
        p["residual_ms"]
    );
    assert!(close(p["residual_ms"].as_f64().unwrap(), outside));
    assert!(close(
        p["logged_total_ms"].as_f64().unwrap(),
        outside + logged
    ));
    let projected = p["projected_onednn_ms"].as_f64().unwrap();
    assert!(close(
        p["projected_total_ms"].as_f64().unwrap(),
        outside + projected
    ));
}

/// A replay's time per iteration: every result's calls × its replayed median (every problem of
/// the fixtures was replayed), over `iterations`: a what-if replay's results count calls per
/// iteration (1), an as-logged replay's the log's calls (its 5 iterations).
fn replayed_per_iteration(file: &str, iterations: f64) -> f64 {
    let r: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let m = x["measurement"]["median_ms"].as_f64().expect("replayed");
            x["calls"].as_f64().unwrap() * m
        })
        .sum::<f64>()
        / iterations
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn advise(replays: &[&str]) -> Value {
    let log = path(LOG);
    let mut args = vec!["advise", log.as_str(), "--format", "json"];
    for r in replays {
        args.extend(["--replay", r]);
    }
    json_of(&args)
}

/// The projection an advice used for rule `id`, in a finding or a not-recommended entry, and
/// the finding's gain per iteration when the rule recommended its change (`None`: not
/// recommended, and then the rule is quiet with the same reason).
fn used(a: &Value, id: &str) -> (Value, Option<f64>) {
    if let Some(f) = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
    {
        return (
            f["projection"].clone(),
            Some(f["gain_ms_per_iteration"].as_f64().unwrap()),
        );
    }
    let n = a["not_recommended"]
        .as_array()
        .and_then(|v| v.iter().find(|n| n["id"] == id))
        .unwrap_or_else(|| panic!("{id}: neither a finding nor not recommended: {a}"));
    let rule = a["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap();
    assert_eq!(rule["fired"], false);
    assert_eq!(rule["why_not"], n["why"]);
    (n["projection"].clone(), None)
}

#[test]
fn stated_figures_are_the_projection_of_the_replay_files() {
    let logged = logged_per_iteration();
    let (bf16, cl, base) = (
        replayed_per_iteration(&replay("bf16-cl"), 1.0),
        replayed_per_iteration(&replay("cl"), 1.0),
        replayed_per_iteration(&replay("as-logged"), 5.0),
    );
    println!("logged {logged:.3}, bf16+cl {bf16:.3}, cl {cl:.3}, as-logged replay {base:.3} ms per iteration");
    // `project` prints the same figures for the same files.
    for (name, want) in [("bf16-cl", bf16), ("cl", cl)] {
        let p = json_of(&["project", &path(LOG), "--replay", &replay(name), "--json"]);
        assert!(close(p["logged_onednn_ms"].as_f64().unwrap(), logged));
        assert!(close(p["projected_onednn_ms"].as_f64().unwrap(), want));
    }
    // Each what-if alone: the log decides.
    for (name, id, want) in [
        ("bf16-cl", "f32-on-bf16-hardware", bf16),
        ("cl", "reorder-overhead", cl),
    ] {
        let a = advise(&[&replay(name)]);
        let (p, gain) = used(&a, id);
        assert!(
            close(p["logged_onednn_ms"].as_f64().unwrap(), logged),
            "{p}"
        );
        assert!(
            close(p["projected_onednn_ms"].as_f64().unwrap(), want),
            "{p}"
        );
        assert!(close(p["speedup"].as_f64().unwrap(), logged / want), "{p}");
        assert!(p["replayed_with"]
            .as_str()
            .unwrap()
            .starts_with("oneDNN 3.2.0"));
        assert_eq!(gain.is_some(), want < logged, "{id}: {p}");
        if let Some(g) = gain {
            assert!(close(g, logged - want), "{g}");
        }
    }
    // With the as-logged replay of the same oneDNN, the change's own speed-up decides, and the
    // gain is that relative change applied to the logged time.
    let a = advise(&[&replay("bf16-cl"), &replay("cl"), &replay("as-logged")]);
    assert_eq!(a["projections"].as_array().unwrap().len(), 3);
    for (id, want) in [("f32-on-bf16-hardware", bf16), ("reorder-overhead", cl)] {
        let (p, gain) = used(&a, id);
        assert!(
            close(p["as_logged_replay_ms"].as_f64().unwrap(), base),
            "{p}"
        );
        assert!(close(
            p["speedup_vs_as_logged_replay"].as_f64().unwrap(),
            base / want
        ));
        assert_eq!(gain.is_some(), want < base, "{id}: {p}");
        if let Some(g) = gain {
            assert!(close(g, logged * (1.0 - want / base)), "{g}");
        }
    }
    // bf16 on this CPU without bf16 units: a slow-down either way, stated with its figures.
    assert!(bf16 > logged && bf16 > base, "fixture changed");
    let why = a["not_recommended"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "f32-on-bf16-hardware")
        .unwrap()["why"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        why.contains(&format!("{logged:.3} → {bf16:.3} ms per iteration"))
            && why.contains(&format!("({:.2}× slower)", bf16 / logged)),
        "{why}"
    );
}

#[test]
fn the_terminal_says_why_a_rule_stayed_quiet() {
    let out = succeeded(
        bin()
            .args(["advise", &path(LOG), "--replay", &replay("bf16-cl")])
            .output()
            .unwrap(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Not recommended (projected, or measured, slower on this machine):")
            && text.contains("[f32-on-bf16-hardware] bf16 is not recommended here"),
        "{text}"
    );
    assert!(
        text.contains("What-if projections on this machine"),
        "{text}"
    );
    // `report` shows the section too, and its JSON carries the advice's projections.
    let out = succeeded(
        bin()
            .args(["report", &path(LOG), "--replay", &replay("bf16-cl")])
            .output()
            .unwrap(),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[f32-on-bf16-hardware] bf16 is not recommended here"),
        "{text}"
    );
    let j = json_of(&[
        "report",
        &path(LOG),
        "--replay",
        &replay("bf16-cl"),
        "--format",
        "json",
    ]);
    assert_eq!(
        j["advice"]["not_recommended"][0]["id"],
        "f32-on-bf16-hardware"
    );
}

#[test]
fn a_replay_of_another_log_or_several_logs_is_refused() {
    let other = path("examples/retinanet_rnx50_fp32.log.gz");
    let err = failed(
        bin()
            .args(["advise", &other, "--replay", &replay("cl")])
            .output()
            .unwrap(),
    );
    assert!(err.contains("not of this log"), "{err}");
    let err = failed(
        bin()
            .args(["advise", &path(LOG), &other, "--replay", &replay("cl")])
            .output()
            .unwrap(),
    );
    assert!(err.contains("give one LOG"), "{err}");
}

/// Every key of the advice JSON with projections is documented in docs/advice-json.md.
#[test]
fn every_advice_key_is_documented() {
    let doc = std::fs::read_to_string(root().join("docs/advice-json.md")).unwrap();
    let a = advise(&[&replay("bf16-cl"), &replay("cl"), &replay("as-logged")]);
    let mut keys: Vec<String> = Vec::new();
    let mut add = |v: &Value| keys.extend(v.as_object().unwrap().keys().cloned());
    add(&a);
    for f in a["findings"].as_array().unwrap() {
        add(f);
        if f["projection"].is_object() {
            add(&f["projection"]);
        }
    }
    for n in a["not_recommended"].as_array().unwrap() {
        add(n);
        add(&n["projection"]);
    }
    add(&a["projections"][0]);
    for k in keys {
        assert!(
            doc.contains(&format!("`{k}`")),
            "docs/advice-json.md does not document `{k}`"
        );
    }
}

/// `advise LOG --project --format json` with oneDNN at `lib`, `OMP_NUM_THREADS` set to
/// `omp_num_threads` (or unset).
fn advise_project(lib: &str, omp_num_threads: Option<&str>) -> std::process::Output {
    let log = path(LOG);
    let mut cmd = bin();
    cmd.args([
        "advise",
        &log,
        "--project",
        "--format",
        "json",
        "--dnnl-lib",
        lib,
    ]);
    match omp_num_threads {
        Some(n) => cmd.env("OMP_NUM_THREADS", n),
        None => cmd.env_remove("OMP_NUM_THREADS"),
    };
    succeeded(cmd.output().unwrap())
}

/// `advise --project` through real oneDNN: the direction it states for bf16 + channels-last
/// agrees with an independent `replay` + `project` of the same what-ifs (the what-if against
/// the as-logged replay, as the rule decides). On a CPU without bf16 units bf16 is several
/// times slower; with bf16 units the direction is whatever the replays say, and a ratio within
/// 20 % of 1 is too close to call on a shared machine.
#[test]
fn advise_project_agrees_with_replay_and_project() {
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let dir = common::temp_dir();
    let log = path(LOG);
    let out = advise_project(&lib, None);
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert!(
        err.contains(
            "replayed `--as bf16 --layout channels-last --threads 1` for f32-on-bf16-hardware in "
        ) && err.contains("replayed `--layout channels-last --threads 1` for reorder-overhead in "),
        "{err}"
    );
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (p, gain) = used(&a, "f32-on-bf16-hardware");
    assert_eq!(p["replay"], "advise --project");
    // Timed replays on a shared machine: the same replay measured twice once differed by 47 %
    // (CI, the test binary's other tests replaying beside it). A disagreement is measured
    // again, up to 3 times, before it fails.
    for attempt in 1..=3 {
        let mut projected = Vec::new();
        for (name, options) in [
            (
                "bf16-cl",
                &["--as", "bf16", "--layout", "channels-last"][..],
            ),
            ("as-logged", &[][..]),
        ] {
            let r = dir.join(format!("{name}-{attempt}.json"));
            // `--run another` for both, like `advise --project`'s replays: what a run of the script,
            // changed or not, would take (the log's own heap accident left out of both).
            let mut args = vec![
                "replay",
                log.as_str(),
                "--threads",
                "1",
                "--run",
                "another",
                "--dnnl-lib",
                &lib,
            ];
            args.extend(options);
            args.extend(["--no-progress", "-o", r.to_str().unwrap()]);
            succeeded(bin().args(&args).output().unwrap());
            let replayed: Value =
                serde_json::from_str(&std::fs::read_to_string(&r).unwrap()).unwrap();
            if !common::onednn_has_bf16(&replayed) {
                // An AVX2-only CPU: oneDNN has no bf16 convolution here, so no figure of bf16 can
                // be compared; bf16 must be not recommended, saying why, with no gain.
                assert!(gain.is_none(), "{p}");
                assert!(
                    p["unavailable_here"].as_str().is_some_and(
                        |u| u.contains("have no bf16 implementation in oneDNN on this CPU")
                    ),
                    "{p}"
                );
                assert!(a["not_recommended"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["id"] == "f32-on-bf16-hardware"));
                println!(
                "SKIPPED: the bf16 figures: oneDNN has no bf16 implementation at {} (not recommended, as it should be)",
                replayed["onednn_isa"]
            );
                return;
            }
            let pr = json_of(&["project", &log, "--replay", r.to_str().unwrap(), "--json"]);
            projected.push(pr["projected_onednn_ms"].as_f64().unwrap());
        }
        let ratio = projected[1] / projected[0];
        println!(
        "independent: bf16+cl {:.3}, as-logged {:.3} ms per iteration (speed-up {ratio:.2}); advise --project: {p}",
        projected[0], projected[1]
    );
        if (0.8..1.25).contains(&ratio) {
            println!("SKIPPED: bf16 within 20 % of the as-logged replay here, too close to call");
            return;
        }
        let stated = p["speedup_vs_as_logged_replay"].as_f64().unwrap();
        let agree = gain.is_some() == (ratio > 1.0) && (stated > 1.0) == (ratio > 1.0);
        if agree {
            return;
        }
        println!("attempt {attempt}: the independent replays disagree with advise --project's: measured again");
    }
    panic!("the independent replays disagreed with advise --project's at 3 attempts: {p}");
}

/// Regression (`advise --project` ignored its own replays when `OMP_NUM_THREADS` was set): with
/// `OMP_NUM_THREADS=2` in the environment the replays of the 1-thread log still run, and are
/// recorded, at the log's 1 thread, so the rule uses them (with 2 threads recorded every
/// projection was classed as another change and both rules skipped them).
#[test]
fn advise_project_runs_at_the_logs_threads_whatever_omp_num_threads_says() {
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let out = advise_project(&lib, Some("2"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "replayed `--as bf16 --layout channels-last --threads 1` for f32-on-bf16-hardware in "
        ),
        "{err}"
    );
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    for id in ["f32-on-bf16-hardware", "reorder-overhead"] {
        let (p, _) = used(&a, id);
        assert_eq!(p["replay"], "advise --project", "{id}: {p}");
        assert!(
            p["transform"].as_str().unwrap().ends_with("--threads 1"),
            "{id}: {p}"
        );
    }
}

/// Regression (the advice named an as-logged replay `as logged`, its documentation and
/// `project` `none (as logged)`): one name everywhere, with the replay's thread count as
/// `project` appends it to a what-if.
#[test]
fn an_as_logged_replay_is_named_as_project_and_the_documentation_name_it() {
    let a = advise(&[&replay("as-logged")]);
    let p = &a["projections"].as_array().unwrap()[0];
    assert_eq!(p["transform"], "none (as logged) --threads 1", "{p}");
    let doc = std::fs::read_to_string(root().join("docs/advice-json.md")).unwrap();
    assert!(doc.contains("`none (as logged) --threads N`"));
}
