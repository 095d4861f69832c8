//! Independent correctness: our breakdowns against oneDNN's own `verbose_converter`
//! (`-g breakdown`, reference CSVs copied from the corpus into `fixtures/corpus`).
//!
//! For every log whose reference is non-empty, every key tuple, call count and time (to the two
//! decimals the converter prints) must match, for the exec and the create tables, with the
//! converter's default keys and with `prim_kind` and `prim_kind,shapes`.
//!
//! Deliberate differences, each checked by a test below:
//! * the converter reads nothing from `dnnl_verbose`/`mkldnn_verbose` logs (its outputs are
//!   empty); we read them (`older_generations_are_read`);
//! * `create:dispatch` lines are diagnostics for us, not creations (the converter rejects them
//!   with "too few/too many fields" warnings, so its tables agree with ours).

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{breakdown, scan, GroupKey, Profile, ScanOptions};
use profilednn_verbose::LogInput;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/corpus")
}

fn profile_of(path: &Path, threads: usize) -> Profile {
    let input = LogInput::open(path).unwrap();
    let out = scan(
        input,
        &ScanOptions {
            threads,
            chunk_size: 4096,
            progress: None,
        },
    );
    Profile::from_scan(path.display().to_string(), out, &ProfileOptions::default())
}

/// event → (key tuple → (ncalls, "time(ms)"))
type Table = BTreeMap<String, BTreeMap<Vec<String>, (u64, String)>>;

fn read_reference(path: &Path) -> (Vec<String>, Table) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut tables = Table::new();
    let mut keys = Vec::new();
    let mut event = String::new();
    let mut header = false;
    for line in text.lines() {
        if let Some(e) = line.strip_prefix("Event: ") {
            event = e.to_string();
            header = true;
            continue;
        }
        if header {
            let cols: Vec<&str> = line.split(',').collect();
            keys = cols[..cols.len() - 6]
                .iter()
                .map(|s| s.to_string())
                .collect();
            header = false;
            continue;
        }
        let cols: Vec<&str> = line.split(',').collect();
        let n = cols.len() - 6;
        let k: Vec<String> = cols[..n].iter().map(|s| s.to_string()).collect();
        let calls: u64 = cols[n].parse().unwrap();
        let prev = tables
            .entry(event.clone())
            .or_default()
            .insert(k.clone(), (calls, cols[n + 1].to_string()));
        assert!(prev.is_none(), "duplicate reference key {k:?}");
    }
    (keys, tables)
}

fn ours(p: &Profile, keys: &[GroupKey]) -> Table {
    let mut t = Table::new();
    for (exec, name) in [(true, "exec"), (false, "create")] {
        let b = breakdown(p, keys, exec);
        if b.rows.is_empty() {
            continue;
        }
        let m = t.entry(name.to_string()).or_default();
        for r in &b.rows {
            m.insert(r.values.clone(), (r.calls, format!("{:.2}", r.time_ms())));
        }
    }
    t
}

fn logs_with_reference() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(corpus().join("onednn")).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            if let Some(stem) = name
                .strip_suffix(".log")
                .or_else(|| name.strip_suffix(".log.gz"))
            {
                out.push((f.clone(), dir.join(stem)));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn breakdowns_equal_the_converter_reference() {
    let mut checked_rows = 0;
    let mut checked_logs = 0;
    for (log, stem) in logs_with_reference() {
        let p = profile_of(&log, 2);
        for suffix in [
            "vc_breakdown_all.csv",
            "vc_breakdown_prim_kind.csv",
            "vc_breakdown_prim_kind_shapes.csv",
        ] {
            let refp = PathBuf::from(format!("{}.{suffix}", stem.display()));
            if std::fs::metadata(&refp).map(|m| m.len()).unwrap_or(0) == 0 {
                continue;
            }
            let (key_names, reference) = read_reference(&refp);
            let keys: Vec<GroupKey> = key_names
                .iter()
                .map(|k| k.parse::<GroupKey>().unwrap())
                .collect();
            let mine = ours(&p, &keys);
            assert_eq!(
                mine.keys().collect::<Vec<_>>(),
                reference.keys().collect::<Vec<_>>(),
                "{}: event tables differ",
                refp.display()
            );
            for (event, rows) in &reference {
                let my_rows = &mine[event];
                for (k, (calls, time)) in rows {
                    let got = my_rows.get(k).unwrap_or_else(|| {
                        panic!(
                            "{} [{event}]: reference row {k:?} missing; ours: {:#?}",
                            refp.display(),
                            my_rows.keys().collect::<Vec<_>>()
                        )
                    });
                    assert_eq!(
                        got,
                        &(*calls, time.clone()),
                        "{} [{event}] {k:?}",
                        refp.display()
                    );
                    checked_rows += 1;
                }
                assert_eq!(
                    my_rows.len(),
                    rows.len(),
                    "{} [{event}]: we have extra rows",
                    refp.display()
                );
            }
            checked_logs += 1;
        }
    }
    assert!(
        checked_logs >= 30,
        "only {checked_logs} reference tables checked"
    );
    eprintln!("checked {checked_rows} rows in {checked_logs} reference tables");
}

#[test]
fn older_generations_are_read() {
    // The converter's outputs for these are empty; we read every primitive line.
    for (rel, min_exec) in [
        ("onednn/v0_19_mxnet/simple_training_net_c.level1.log", 100),
        ("onednn/v0_19_mxnet/simple_net_cpp.level1.log.gz", 1000),
        ("onednn/v1_0_mxnet/cnn_training_c.level2.log", 100),
        ("onednn/v2_4_pypi/verbose_level2_timestamp.log", 20),
    ] {
        let path = corpus().join(rel);
        let p = profile_of(&path, 2);
        // Independent count: lines that start with a marker and an exec operation.
        let text = read_text(&path);
        let expect = text
            .lines()
            .filter(|l| {
                let l = l.trim_end_matches('\r');
                (l.starts_with("mkldnn_verbose,") || l.starts_with("dnnl_verbose,"))
                    && l.split(',').take(3).any(|f| f == "exec")
            })
            .count() as u64;
        assert!(
            expect >= min_exec,
            "{rel}: fixture has only {expect} exec lines"
        );
        assert_eq!(p.lines.exec, expect, "{rel}");
        assert_eq!(p.lines.malformed, 0, "{rel}: {:?}", p.malformed);
        let sum: f64 = text
            .lines()
            .filter(|l| l.split(',').take(3).any(|f| f == "exec"))
            .map(|l| {
                l.trim_end()
                    .rsplit(',')
                    .next()
                    .unwrap()
                    .parse::<f64>()
                    .unwrap()
            })
            .sum();
        assert!(
            (p.exec_time_ms() - sum).abs() < 1e-6 * sum.max(1.0),
            "{rel}: {} vs {sum}",
            p.exec_time_ms()
        );
        assert!(
            !p.metadata.versions.is_empty(),
            "{rel}: version not found in header"
        );
    }
}

fn read_text(path: &Path) -> String {
    use std::io::Read;
    let bytes = std::fs::read(path).unwrap();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    }
}

#[test]
fn serial_and_parallel_scans_agree_on_every_fixture() {
    for (log, _) in logs_with_reference() {
        let a = profile_of(&log, 1);
        let b = profile_of(&log, 3);
        assert_eq!(a.exec_time_ps(), b.exec_time_ps(), "{}", log.display());
        assert_eq!(a.lines.total, b.lines.total);
        assert_eq!(a.entries.len(), b.entries.len());
        for (x, y) in a.entries.iter().zip(&b.entries) {
            assert_eq!(
                (x.calls, x.time_ps, x.first_line),
                (y.calls, y.time_ps, y.first_line)
            );
        }
    }
}
