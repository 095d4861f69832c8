//! Terminal tables.

mod columns;
mod fit;
mod roofline;

pub use columns::{rank_of_source, RankColumns, AUTO_COLUMNS};
pub use fit::fit;

use comfy_table::presets::UTF8_HORIZONTAL_ONLY;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, TableComponent};
use profilednn_analysis::iterations::Iterations;
use profilednn_analysis::summary::{NamedBreakdown, Summary};
use profilednn_analysis::{GroupKey, IterationMethod};
use std::fmt::Write;

pub struct TerminalOptions {
    /// Rows shown per table.
    pub rows: usize,
    pub width: Option<u16>,
    /// The logs side by side (ranks) that get columns of their own.
    pub columns: RankColumns,
}

fn bar(share: f64) -> String {
    let eighths = (share * 80.0).round() as usize;
    let full = eighths / 8;
    let part = [" ", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8];
    format!(
        "{}{}",
        "█".repeat(full),
        if eighths.is_multiple_of(8) { "" } else { part }
    )
}

pub(crate) fn ms(v: f64) -> String {
    if v < 0.0 {
        return format!("-{}", ms(-v));
    }
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 0.01 || v == 0.0 {
        format!("{v:.3}")
    } else {
        // Small times as decimals (0.005, 0.000977), never in exponent notation.
        let s = format!("{v:.6}");
        let s = s.trim_end_matches('0');
        if s.ends_with('.') {
            "<0.000001".into()
        } else {
            s.into()
        }
    }
}

fn plural(n: u64, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

pub fn render(s: &Summary, opts: &TerminalOptions) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "profilednn report: {}", sources_line(&s.sources));
    render_header(&mut out, s);
    let _ = writeln!(out);
    let _ = write!(
        out,
        "Total oneDNN time: {} ms in {}",
        ms(s.total_time_ms),
        plural(s.calls, "call")
    );
    if s.create_calls > 0 {
        let _ = write!(
            out,
            " (+ {} ms creating primitives in {})",
            ms(s.create_time_ms),
            plural(s.create_calls, "creation")
        );
    }
    let _ = writeln!(out);
    let picked = opts.columns.pick(&s.per_log);
    render_iterations(&mut out, s, &picked);
    if let Some(w) = s.wall_span_ms {
        // Logs side by side (ranks) run at the same time: their summed time over one span
        // would claim more than 100 % busy, so the share is per log, averaged.
        let logs = s.per_log.len().max(1) as f64;
        let share = if w > 0.0 {
            s.total_time_ms / (w * logs) * 100.0
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "Wall-clock span of timestamps: {} ms (oneDNN busy {share:.1}% of it{})",
            ms(w),
            if s.per_log.is_empty() {
                String::new()
            } else {
                format!(
                    " per log on average: span over all {} logs, each log's time against it",
                    s.per_log.len()
                )
            }
        );
    }
    render_logs(&mut out, s, opts, &picked);
    if s.calls == 0 {
        // A log of a run that called no oneDNN (given with its PyTorch trace): empty tables
        // would say nothing; the PyTorch view holds the step.
        let _ = writeln!(
            out,
            "No oneDNN primitive ran: the step is in the framework's own ops (below, from the trace)."
        );
        render_problems(&mut out, s);
        return out;
    }
    for b in &s.breakdowns {
        let _ = writeln!(out, "\n{}\n{}", b.title, table(b, s, opts, &picked));
        if b.total_rows > b.rows.len().min(opts.rows) {
            let _ = writeln!(
                out,
                "  … {} more rows (use --top N, --by KEYS or --format json/csv)",
                b.total_rows - b.rows.len().min(opts.rows)
            );
        }
    }
    if s.breakdowns
        .iter()
        .any(|b| b.rows.iter().any(|r| r.reference_impl))
    {
        let _ = writeln!(
            out,
            "\n⚠ rows marked [ref] run oneDNN reference (slow fallback) implementations."
        );
    }
    if let Some(e) = &s.efficiency {
        roofline::render(&mut out, e, opts);
    }
    render_problems(&mut out, s);
    out
}

/// The report's head: the runtime's facts (versions, formats, runtimes, ISA) and what the
/// lines read were.
fn render_header(out: &mut String, s: &Summary) {
    let md = &s.metadata;
    let mut facts = Vec::new();
    if !md.versions.is_empty() {
        facts.push(md.versions.join(" / "));
    }
    if !md.formats.is_empty() {
        facts.push(format!("format {}", md.formats.join(" + ")));
    }
    if !md.runtimes.is_empty() {
        facts.push(md.runtimes.join(", "));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "  {}", facts.join(" · "));
    }
    for isa in &md.isa {
        let _ = writeln!(out, "  ISA: {isa}");
    }
    let l = &s.lines;
    let label = |k: &str| match k {
        "foreign" => "application output".to_string(),
        "truncated_last_line" => "truncated last line".to_string(),
        "logger" => "file-logger lines".to_string(),
        "marker" => "iteration markers".to_string(),
        o => o.replace('_', " "),
    };
    let mut skipped: Vec<String> = l
        .skipped
        .iter()
        .map(|(k, v)| format!("{v} {}", label(k)))
        .collect();
    if skipped.is_empty() {
        skipped.push("none".into());
    }
    let _ = writeln!(
        out,
        "  {}: {} exec, {} create, {} info, {} diagnostic, {} malformed; skipped: {}",
        plural(l.total, "line"),
        l.exec,
        l.create,
        l.info,
        l.diagnostics,
        l.malformed,
        skipped.join(", ")
    );
}

/// The logs side by side (ranks): a row per log given columns, and how many have none.
fn render_logs(out: &mut String, s: &Summary, opts: &TerminalOptions, picked: &[usize]) {
    if !s.per_log.is_empty() && !picked.is_empty() {
        let mut t = new_table(opts);
        t.set_header(vec![
            "log",
            "time ms",
            "calls",
            "lines",
            "malformed",
            "skipped",
        ]);
        for p in picked.iter().map(|&i| &s.per_log[i]) {
            t.add_row(vec![
                text(&p.source),
                num(ms(p.total_time_ms)),
                num(p.calls.to_string()),
                num(p.lines.total.to_string()),
                num(p.lines.malformed.to_string()),
                num(p.lines.skipped_total().to_string()),
            ]);
        }
        let _ = writeln!(out, "\nLogs side by side (tables below are merged)\n{t}");
    }
    if picked.len() < s.per_log.len() {
        let _ = writeln!(
            out,
            "\n{} logs side by side: the tables below merge them{}; `--ranks all` (or `--ranks 0,17`) gives each rank its columns",
            s.per_log.len(),
            if picked.is_empty() {
                String::new()
            } else {
                format!(", with the columns of {} of them", picked.len())
            }
        );
    }
}

/// The logs a report is of: the ranks of one log as the log once and their numbers (the first
/// and the last beyond [`AUTO_COLUMNS`]); other logs every one up to [`AUTO_COLUMNS`], else the
/// first and the last and how many.
fn sources_line(sources: &[String]) -> String {
    let ranks: Option<Vec<(&str, u32)>> = sources
        .iter()
        .map(|s| Some((s.rsplit_once(" [rank ")?.0, rank_of_source(s)?)))
        .collect();
    match (ranks.as_deref(), sources) {
        (Some([(base, first), .., (_, last)]), _)
            if ranks.iter().flatten().all(|(b, _)| b == base) =>
        {
            if sources.len() > AUTO_COLUMNS {
                format!("{base} [ranks {first} … {last}] ({} logs)", sources.len())
            } else {
                let all: Vec<String> = ranks.iter().flatten().map(|r| r.1.to_string()).collect();
                format!("{base} [ranks {}]", all.join(", "))
            }
        }
        (_, [first, .., last]) if sources.len() > AUTO_COLUMNS => {
            format!("{first} … {last} ({} logs)", sources.len())
        }
        _ => sources.join(", "),
    }
}

fn method(it: &Iterations) -> &'static str {
    match it.method {
        IterationMethod::User => "given",
        IterationMethod::Markers => "from marker lines",
        IterationMethod::RepeatingPattern => "detected from the repeating call pattern",
    }
}

/// Iteration times in one line: all of them when there are at most ten, else a summary.
pub fn per_iteration_list(v: &[f64]) -> String {
    if v.len() <= 10 {
        let each: Vec<String> = v.iter().map(|x| ms(*x)).collect();
        return format!("{} ms", each.join(", "));
    }
    let mut sorted = v.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    format!(
        "{n} values: first {}, median {}, last {}, min {}, max {} ms",
        ms(v[0]),
        ms(median),
        ms(v[n - 1]),
        ms(sorted[0]),
        ms(sorted[n - 1])
    )
}

fn iteration_details(out: &mut String, indent: &str, it: &Iterations) {
    if !it.per_iteration_ms.is_empty() {
        let _ = writeln!(
            out,
            "{indent}per iteration: {}",
            per_iteration_list(&it.per_iteration_ms)
        );
    }
    // Shown when it is worth a line: 0.0005 ms is what a 3-decimal figure rounds away.
    if let Some(b) = it.before_first_ms.filter(|b| *b >= 0.0005) {
        let _ = writeln!(
            out,
            "{indent}+ {} ms of oneDNN time before the first marker (set-up, warm-up): not averaged in",
            ms(b)
        );
    }
    if let Some(p) = it.partial_last_ms {
        let _ = writeln!(
            out,
            "{indent}+ a partial last iteration ({} ms), cut by the end of readable data: not averaged in",
            ms(p)
        );
    }
}

fn render_iterations(out: &mut String, s: &Summary, picked: &[usize]) {
    if s.per_log.is_empty() {
        if let (Some(it), Some(per)) = (&s.iterations, s.per_iteration_time_ms) {
            let _ = writeln!(
                out,
                "Iterations: {} ({}): {} ms of oneDNN time per iteration",
                it.count,
                method(it),
                ms(per)
            );
            iteration_details(out, "  ", it);
        }
        return;
    }
    if s.per_log.iter().all(|p| p.iterations.is_none()) {
        return;
    }
    match (&s.iterations, s.per_iteration_time_ms) {
        (Some(it), Some(per)) => {
            let _ = writeln!(
                out,
                "Iterations: {} in each log ({}): {} ms of oneDNN time per iteration = the {} logs' \
                 time summed (as ranks running side by side), divided by {}",
                it.count,
                method(it),
                ms(per),
                s.per_iteration_logs,
                it.count
            );
        }
        _ => {
            let _ = writeln!(
                out,
                "Iterations differ between the logs: no per-iteration figure for the merged view"
            );
        }
    }
    for p in picked.iter().map(|&i| &s.per_log[i]) {
        match (&p.iterations, p.per_iteration_time_ms) {
            (Some(it), Some(per)) => {
                let _ = writeln!(
                    out,
                    "  {}: {} iterations ({}), {} ms per iteration",
                    clip(&p.source),
                    it.count,
                    method(it),
                    ms(per)
                );
                iteration_details(out, "    ", it);
            }
            _ => {
                let _ = writeln!(out, "  {}: iterations unknown", clip(&p.source));
            }
        }
    }
}

fn render_problems(out: &mut String, s: &Summary) {
    if !s.malformed.is_empty() {
        let _ = writeln!(
            out,
            "\nMalformed lines ({} in all; read, counted, and left out of the totals):",
            s.lines.malformed
        );
        for m in s.malformed.iter().take(10) {
            let times = if m.count > 1 {
                format!(" (and {} more like it)", m.count - 1)
            } else {
                String::new()
            };
            let _ = writeln!(out, "  line {}{times}: {}", m.line, m.expected);
            let _ = writeln!(out, "    {}", m.text.chars().take(160).collect::<String>());
        }
    }
    if !s.diagnostics.is_empty() {
        let d: Vec<String> = s
            .diagnostics
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        let _ = writeln!(out, "\noneDNN diagnostics: {}", d.join(", "));
        for (line, kind, text) in s
            .diagnostic_examples
            .iter()
            .filter(|e| e.1 == "error" || e.1 == "warning")
            .take(5)
        {
            let _ = writeln!(
                out,
                "  line {line} [{kind}]: {}",
                text.chars().take(160).collect::<String>()
            );
        }
    }
    for e in &s.read_errors {
        let _ = writeln!(
            out,
            "\n✗ {e}\n  Everything before that point is included above."
        );
    }
}

/// The terminal's width, when stdout is one.
pub fn terminal_width() -> Option<u16> {
    Table::new().width()
}

pub(crate) fn new_table(opts: &TerminalOptions) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_HORIZONTAL_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic);
    if let Some(w) = opts.width {
        t.set_width(w);
    }
    t
}

/// Longest line of a terminal table cell, in characters. comfy-table's wrapping takes time
/// quadratic in a cell's length (a 3 MB problem descriptor took minutes), so longer lines are
/// clipped before they reach it; JSON and CSV keep the full text.
pub const MAX_CELL_LINE: usize = 160;

/// Each line of `text` clipped to [`MAX_CELL_LINE`] characters, saying how much was left out.
pub fn clip(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * MAX_CELL_LINE));
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match line.char_indices().nth(MAX_CELL_LINE) {
            None => out.push_str(line),
            Some(_) => {
                let keep = MAX_CELL_LINE - 40;
                let cut = line.char_indices().nth(keep).map_or(line.len(), |(b, _)| b);
                let left = line[cut..].chars().count();
                let _ = write!(out, "{}… (+{left} chars)", &line[..cut]);
            }
        }
    }
    out
}

/// A text cell, clipped (see [`clip`]).
pub(crate) fn text(s: impl AsRef<str>) -> Cell {
    Cell::new(clip(s.as_ref()))
}

pub(crate) fn num(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn table(b: &NamedBreakdown, s: &Summary, opts: &TerminalOptions, picked: &[usize]) -> Table {
    let mut t = new_table(opts);
    let identity = b.keys == GroupKey::CONVERTER_DEFAULT;
    if !identity {
        t.remove_style(TableComponent::HorizontalLines);
        t.remove_style(TableComponent::MiddleIntersections);
        t.remove_style(TableComponent::LeftBorderIntersections);
        t.remove_style(TableComponent::RightBorderIntersections);
    }
    let mut header: Vec<String> = if identity {
        vec!["primitive".into()]
    } else {
        b.keys.iter().map(|k| k.name().to_string()).collect()
    };
    header.extend(["calls", "time ms", "share", "", "mean ms"].map(String::from));
    if identity {
        // Identical calls: their median and p90 show a busy machine that the mean hides.
        header.extend(["median ms", "p90 ms", "GFLOP/s"].map(String::from));
    }
    let iter = s.iterations.is_some();
    if iter {
        header.push("ms/iter".into());
    }
    for &i in picked {
        // A rank of a multi-rank log is named by its rank (`… [rank 1]` → `rank 1 ms`).
        match rank_of_source(&s.per_log[i].source) {
            Some(r) => header.push(format!("rank {r} ms")),
            None => header.push(format!("log {} ms", i + 1)),
        }
    }
    t.set_header(header);
    for r in b.rows.iter().take(opts.rows) {
        let mut cells: Vec<Cell> = if identity {
            let v = &r.values;
            let mut text = format!("{} {} {}\n{}", v[1], v[3], v[2], v[7]);
            text.push_str(&format!("\n{}", v[4]));
            if !v[5].is_empty() || !v[6].is_empty() {
                text.push_str(&format!("\n{} {}", v[5], v[6]));
            }
            vec![self::text(&text)]
        } else {
            b.keys
                .iter()
                .zip(&r.values)
                .map(|(k, v)| {
                    if *k == GroupKey::Impl && r.reference_impl {
                        text(format!("{v} [ref]"))
                    } else {
                        text(v)
                    }
                })
                .collect()
        };
        cells.push(num(r.calls.to_string()));
        cells.push(num(ms(r.time_ms)));
        cells.push(num(format!("{:.1}%", r.share * 100.0)));
        cells.push(Cell::new(bar(r.share)));
        cells.push(num(ms(r.mean_ms)));
        if identity {
            cells.push(num(r.median_ms.map(ms).unwrap_or_default()));
            cells.push(num(r.p90_ms.map(ms).unwrap_or_default()));
            cells.push(num(match (r.gflops, r.flops_per_call) {
                (Some(g), Some(f)) if f > 0.0 => format!("{g:.1}"),
                _ => String::new(),
            }));
        }
        if iter {
            cells.push(num(r.per_iteration_ms.map(ms).unwrap_or_default()));
        }
        for &i in picked {
            cells.push(num(r
                .per_log_time_ms
                .get(i)
                .map(|v| ms(*v))
                .unwrap_or_default()));
        }
        t.add_row(cells);
    }
    t
}
