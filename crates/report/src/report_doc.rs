//! The whole `report` document, in each of its terminal and JSON forms: the summary, the ranks,
//! the PyTorch view and the advice, assembled here so that the command only chooses the form.

use crate::terminal::{RankColumns, TerminalOptions};
use profilednn_advice::Advice;
use profilednn_analysis::ranks::RankSet;
use profilednn_analysis::Summary;
use profilednn_torchtrace::TorchJoin;
use serde_json::Value;

/// What a report holds, computed once by the command.
pub struct ReportDoc<'a> {
    pub summary: &'a Summary,
    pub ranks: &'a [RankSet],
    pub torch: Option<&'a TorchJoin>,
    /// `None` with `--no-advice`.
    pub advice: Option<&'a Advice>,
}

/// How the terminal form is laid out.
pub struct TextLayout {
    /// Rows per table (`--top`).
    pub top: usize,
    /// `--ranks`: which ranks get a column (none: the summary at scale).
    pub ranks: Option<RankColumns>,
    /// Written to a terminal (its full width) rather than a file or a pipe.
    pub tty: bool,
}

/// The terminal report: the tables, the ranks, the PyTorch view and the advice's short form.
/// Full width on a terminal, 160 columns into a file or a pipe; a multi-rank report's lines
/// are kept to the terminal's width (120 columns into a file or a pipe), whatever the number
/// of ranks (but with `--ranks all`, which asks for a column per rank).
pub fn text(doc: &ReportDoc, layout: &TextLayout) -> String {
    let fold = !doc.ranks.is_empty() && layout.ranks != Some(RankColumns::All);
    let width = match (layout.tty, fold) {
        (true, _) => None,
        (false, true) => Some(120),
        (false, false) => Some(160),
    };
    let options = TerminalOptions {
        rows: layout.top,
        width,
        columns: layout.ranks.clone().unwrap_or_default(),
    };
    // What a terminal shows, for the sentences folded to it.
    let columns = usize::from(
        width
            .or_else(crate::terminal::terminal_width)
            .unwrap_or(120),
    );
    let fit = |t: String| {
        if fold {
            crate::terminal::fit(&t, columns)
        } else {
            t
        }
    };
    let mut text = fit(crate::terminal::render(doc.summary, &options));
    text += &crate::ranks::render(doc.ranks, &options.columns, columns);
    if let Some(j) = doc.torch {
        text += &crate::torch_view::render(j, layout.top);
    }
    if let Some(a) = doc.advice {
        text += &fit(crate::advice::render(a, true));
    }
    text
}

/// The JSON report (`docs/report-json.md`): the summary, with `ranks` and `rank_logs` for
/// multi-rank logs, `torch` with a trace, and `advice` unless left out.
pub fn json(doc: &ReportDoc) -> serde_json::Result<Value> {
    let mut v = crate::json::to_value(doc.summary);
    if !doc.ranks.is_empty() {
        let (list, logs) = crate::json::ranks(doc.ranks);
        v["ranks"] = list;
        v["rank_logs"] = logs;
    }
    if let Some(j) = doc.torch {
        v["torch"] = serde_json::to_value(j)?;
        // The compile warm-up against the steady step (`null` when nothing compiled).
        v["torch"]["warm_up"] =
            serde_json::to_value(profilednn_analysis::compile_cost::warm_up(j))?;
    }
    if let Some(a) = doc.advice {
        v["advice"] = serde_json::to_value(a)?;
    }
    Ok(v)
}
