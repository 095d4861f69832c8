//! `--format csv`: one breakdown table (the `--by` keys, or the converter's identity keys).

use profilednn_analysis::summary::Summary;

pub fn render(s: &Summary) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let Some(b) = s.breakdowns.first() else {
        return Ok(String::new());
    };
    let with_iter = s.iterations.is_some();
    let mut header: Vec<String> = b.keys.iter().map(|k| k.name().to_string()).collect();
    header.extend(
        [
            "calls",
            "time_ms",
            "share_pct",
            "mean_ms",
            "min_ms",
            "max_ms",
        ]
        .map(String::from),
    );
    if with_iter {
        header.push("time_ms_per_iteration".into());
    }
    for src in s.sources.iter().filter(|_| s.sources.len() > 1) {
        header.push(format!("time_ms[{src}]"));
    }
    w.write_record(&header)?;
    for r in &b.rows {
        let mut rec = r.values.clone();
        rec.push(r.calls.to_string());
        rec.push(format!("{:.6}", r.time_ms));
        rec.push(format!("{:.2}", r.share * 100.0));
        rec.push(format!("{:.6}", r.mean_ms));
        rec.push(format!("{:.6}", r.min_ms));
        rec.push(format!("{:.6}", r.max_ms));
        if with_iter {
            rec.push(
                r.per_iteration_ms
                    .map(|v| format!("{v:.6}"))
                    .unwrap_or_default(),
            );
        }
        for t in &r.per_log_time_ms {
            rec.push(format!("{t:.6}"));
        }
        w.write_record(&rec)?;
    }
    Ok(String::from_utf8(w.into_inner().expect("flush")).expect("utf8"))
}
