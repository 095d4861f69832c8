//! Launch lint (issue 51 item 18): `record --ranks` writes how the ranks were launched beside the
//! log (their OMP_NUM_THREADS, affinity masks, the cgroup's CPU limit), and `advise` says what
//! it cost (`launch-config`) on the labelled torchrun fixture. Expected figures are counted from
//! the fixture's own lines here.

mod common;
use common::{bin, failed, json_of, root, row_where, succeeded, temp_dir};
use serde_json::{json, Value};
use std::io::Read;

/// The fixture's oneDNN time, all ranks, from the last field of each labelled exec line.
fn exec_ms(path: &std::path::Path) -> f64 {
    let mut s = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s.lines()
        .filter_map(|l| l.split_once("]:").map(|(_, t)| t))
        .filter(|t| t.starts_with("onednn_verbose,") && t.contains(",exec,"))
        .map(|t| t.rsplit(',').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

fn rule<'a>(a: &'a Value, id: &str) -> &'a Value {
    a["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap()
}

#[test]
fn advise_prices_torchruns_one_thread_on_unpinned_ranks() {
    let fixture = root().join("fixtures/multirank/torchrun_2ranks.log.gz");
    let dir = temp_dir();
    let log = dir.join("run.log.gz");
    std::fs::copy(&fixture, &log).unwrap();
    let advise = || json_of(&["advise", log.to_str().unwrap(), "--format", "json"]);
    // Without a launch file the rule says what it needs.
    let a = advise();
    assert_eq!(rule(&a, "launch-config")["fired"], false);
    assert!(rule(&a, "launch-config")["why_not"]
        .as_str()
        .unwrap()
        .contains("record --ranks"));
    // Hand-made: torchrun, 2 ranks per node, OMP_NUM_THREADS unset when launched and 1 in each
    // rank (torchrun's), both ranks allowed on CPUs 0-7 of an 8-CPU host.
    let rank =
        |r: u32| json!({"rank": r, "omp_num_threads": "1", "cpus": [0, 1, 2, 3, 4, 5, 6, 7]});
    let launch = json!({
        "schema": "profilednn.launch.v1", "launcher": "torchrun", "ranks_per_node": 2,
        "launch_omp_num_threads": null, "host_cpus": 8, "cpu_quota": null,
        "ranks": [rank(0), rank(1)],
    });
    std::fs::write(dir.join("run.launch.json"), launch.to_string()).unwrap();
    let a = advise();
    let f = row_where(&a["findings"], "id", "launch-config");
    assert_eq!(
        f["evidence"]["settings"],
        json!(["omp-default", "unpinned"])
    );
    // 8 CPUs / 2 ranks = 4 per rank, 1 used: up to 4×, on each rank's half of the log's oneDNN
    // time: (total / 2) × (1 − 1/4).
    assert_eq!(f["evidence"]["speedup_up_to"], 4.0);
    let want = exec_ms(&fixture) / 2.0 * 0.75;
    let gain = f["gain_ms"].as_f64().unwrap();
    assert!(
        (gain - want).abs() < 1e-6 * want.max(1.0),
        "{gain} vs {want}"
    );
    let title = f["title"].as_str().unwrap();
    assert!(title.contains("torchrun set it to 1 in each"), "{title}");
    assert!(title.contains("not pinned"), "{title}");
    assert!(f["action"].as_str().unwrap().contains("OMP_NUM_THREADS=4"));
    // `report`'s advice reads the same file (issue 51 item 18: it did not).
    let r = json_of(&["report", log.to_str().unwrap(), "--format", "json"]);
    let rf = row_where(&r["advice"]["findings"], "id", "launch-config");
    assert_eq!(rf["gain_ms"], f["gain_ms"]);
    // A launch file that is not one: an error naming it.
    std::fs::write(dir.join("run.launch.json"), "{").unwrap();
    let err = failed(
        bin()
            .args(["advise", log.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    assert!(err.contains("run.launch.json: not a launch file"), "{err}");
}

#[test]
fn record_ranks_writes_each_ranks_environment_and_affinity() {
    // A launcher named torchrun that starts two ranks as torchrun does: RANK and
    // OMP_NUM_THREADS=1 in each rank's environment, none in its own.
    let dir = temp_dir();
    let exe = dir.join("torchrun");
    std::fs::write(
        &exe,
        "#!/bin/sh\nRANK=0 OMP_NUM_THREADS=1 sleep 1 &\nRANK=1 OMP_NUM_THREADS=1 sleep 1 &\nwait\n",
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let log = dir.join("x.log");
    let mut record = bin();
    record.args([
        "record",
        "--ranks",
        "--no-report",
        "-o",
        log.to_str().unwrap(),
        "--",
    ]);
    let run = record.arg(&exe).args(["--nproc-per-node", "2", "t.py"]);
    succeeded(run.env_remove("OMP_NUM_THREADS").output().unwrap());
    let l: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("x.launch.json")).unwrap()).unwrap();
    assert_eq!(l["launcher"], "torchrun");
    assert_eq!(l["ranks_per_node"], 2);
    assert_eq!(l["launch_omp_num_threads"], Value::Null);
    let ranks = l["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2, "{l}");
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(r["rank"], i as u64);
        assert_eq!(r["omp_num_threads"], "1");
        assert!(!r["cpus"].as_array().unwrap().is_empty());
    }
}
