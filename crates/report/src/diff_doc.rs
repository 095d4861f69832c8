//! `profilednn diff`'s document in its three forms: the oneDNN primitives' diff and, with the
//! two runs' PyTorch traces, their comparison, which each form adds in its own way (a section,
//! a `torch` key, the page's PyTorch part).

use crate::terminal::TerminalOptions;
use profilednn_analysis::diff::Diff;
use profilednn_analysis::torch_compare::{compare, TorchComparison};
use profilednn_torchtrace::TorchJoin;
use serde_json::Value;

/// What `diff` writes.
pub struct DiffDoc<'a> {
    pub diff: &'a Diff,
    /// The runs' traces joined with their logs, before and after (`diff --torch-trace`).
    pub torch: Option<(&'a TorchJoin, &'a TorchJoin)>,
}

impl DiffDoc<'_> {
    fn compared(&self) -> Option<TorchComparison> {
        self.torch.map(|(b, a)| compare(b, a))
    }

    /// The terminal tables, `o.rows` rows each, then the PyTorch view.
    pub fn text(&self, o: &TerminalOptions) -> String {
        let mut t = crate::diff_text::render(self.diff, o);
        if let Some(c) = self.compared() {
            t += &crate::torch_view::render_diff(&c, o.rows);
        }
        t
    }

    /// The diff's JSON, with the traces and their comparison under `torch`.
    pub fn json(&self) -> serde_json::Result<Value> {
        let mut v = serde_json::to_value(self.diff)?;
        if let (Some((b, a)), Some(c)) = (self.torch, self.compared()) {
            v["torch"] = serde_json::json!({
                "before": b, "after": a, "moved": c.moved, "fused": c.fused,
                "warm_up": c.warm_up, "payback": c.payback, "python_stacks": c.python_stacks,
            });
        }
        Ok(v)
    }

    /// One self-contained HTML page.
    pub fn html(&self) -> String {
        crate::html::diff_page(self.diff, self.compared().as_ref())
    }
}
