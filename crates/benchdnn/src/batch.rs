//! A profile as benchdnn batch files: one per driver, each problem once, weighted by its calls.

use crate::line;
use profilednn_analysis::{EventKind, Profile};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct BatchLine {
    /// The benchdnn input line (without the driver option).
    pub line: String,
    pub calls: u64,
    pub time_ms: f64,
    /// Implementations the log ran for this problem.
    pub implementations: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Batches {
    /// Driver → problems, heaviest first.
    pub drivers: BTreeMap<String, Vec<BatchLine>>,
    /// Kinds benchdnn has no driver for, with their executions.
    pub skipped: BTreeMap<String, u64>,
}

pub fn batches(p: &Profile) -> Batches {
    let mut drivers: BTreeMap<String, BTreeMap<String, BatchLine>> = BTreeMap::new();
    let mut skipped = BTreeMap::new();
    for e in p.entries.iter().filter(|e| e.event == EventKind::Exec) {
        let Some((drv, text)) = line(&e.primitive) else {
            *skipped.entry(e.primitive.kind.to_string()).or_insert(0) += e.calls;
            continue;
        };
        let b = drivers
            .entry(drv.to_string())
            .or_default()
            .entry(text.clone())
            .or_insert_with(|| BatchLine {
                line: text,
                calls: 0,
                time_ms: 0.0,
                implementations: Vec::new(),
            });
        b.calls += e.calls;
        b.time_ms += e.time_ms();
        if !b.implementations.contains(&e.primitive.implementation) {
            b.implementations.push(e.primitive.implementation.clone());
        }
    }
    Batches {
        drivers: drivers
            .into_iter()
            .map(|(d, m)| {
                let mut v: Vec<BatchLine> = m.into_values().collect();
                v.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
                (d, v)
            })
            .collect(),
        skipped,
    }
}

/// The `run.sh` beside the batch files of `drivers`: runs each with benchdnn in performance
/// mode (`BENCHDNN=path/to/benchdnn`) and keeps its output under `results/`, which
/// `profilednn benchdnn --ingest` reads back.
pub fn run_script<'a>(drivers: impl IntoIterator<Item = &'a str>) -> String {
    let mut run = String::from(
        "#!/bin/sh\n# Runs every batch file with benchdnn (BENCHDNN=path/to/benchdnn) and keeps the results.\nset -e\ncd \"$(dirname \"$0\")\"\nBENCHDNN=${BENCHDNN:-benchdnn}\nmkdir -p results\n",
    );
    for driver in drivers {
        run.push_str(&format!(
            "\"$BENCHDNN\" --mode=P --{driver} --batch={driver}.batch | tee results/{driver}.txt\n"
        ));
    }
    run
}

/// One batch file's text: a header saying how to run it, then each problem preceded by a
/// comment with its weight in the log (benchdnn ignores `#` lines).
pub fn batch_file(driver: &str, source: &str, lines: &[BatchLine]) -> String {
    let mut s = format!(
        "# benchdnn batch file written by profilednn from {source}\n\
         # run: benchdnn --mode=P --{driver} --batch={driver}.batch\n\
         # each problem is preceded by its weight in the log: calls and oneDNN time\n"
    );
    for l in lines {
        s.push_str(&format!(
            "# calls={} time_ms={:.6} impl={}\n{}\n",
            l.calls,
            l.time_ms,
            l.implementations.join(","),
            l.line
        ));
    }
    s
}
