//! `reorder-overhead`: layout (and data-type) churn.
//!
//! With a channels-last (or plain) what-if projection the rule states the projected reorder
//! time and total on this machine instead of "all reorder time", and does not recommend a
//! layout that is projected slower: removing reorders can make the kernels slower.

use super::*;
use crate::{Change, Layout, Projected, WantedWhatIf};
use profilednn_model::PrimitiveKind;

pub const ID: &str = "reorder-overhead";

/// The what-if this rule speaks for: one layout end to end, channels-last.
const WHAT_IF: Change = Change {
    bf16: false,
    layout: Layout::ChannelsLast,
    other: false,
};

/// The reorders split into data-type conversions and layout changes, or why the rule is quiet.
struct Reorders<'a> {
    all: Vec<&'a Entry>,
    convert: Vec<&'a Entry>,
    layout: Vec<&'a Entry>,
    time: f64,
    share: f64,
}

impl Reorders<'_> {
    /// Layout changes take most of the reorder time (the action is a layout, not bf16 weights).
    fn mostly_layout(&self) -> bool {
        ms_sum(self.convert.iter().copied()) <= ms_sum(self.layout.iter().copied())
    }
}

fn reorders<'a>(ev: &'a Evidence, t: &Thresholds) -> Result<Reorders<'a>, String> {
    let total = total_ms(ev);
    let all: Vec<&Entry> = exec(ev)
        .filter(|e| e.primitive.kind == PrimitiveKind::Reorder)
        .collect();
    let (time, share) = time_share(total, &all);
    if share < t.reorder_share {
        return Err(format!(
            "reorders take {} of oneDNN time (threshold {})",
            pct(share),
            pct(t.reorder_share)
        ));
    }
    // A reorder whose source and destination types differ converts data (f32 ↔ bf16); the
    // others only change layout.
    let (convert, layout): (Vec<&Entry>, Vec<&Entry>) = all.iter().partition(|e| {
        let dts: Vec<_> = e
            .primitive
            .mds
            .iter()
            .filter(|m| !m.is_absent())
            .map(|m| &m.data_type)
            .collect();
        dts.windows(2).any(|w| w[0] != w[1])
    });
    Ok(Reorders {
        all,
        convert,
        layout,
        time,
        share,
    })
}

pub fn wanted(ev: &Evidence, t: &Thresholds) -> Option<WantedWhatIf> {
    reorders(ev, t)
        .ok()
        .filter(Reorders::mostly_layout)
        .map(|_| WantedWhatIf {
            rule: ID,
            change: WHAT_IF,
        })
}

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let r = reorders(ev, t)?;
    let ms = |v: &[&Entry]| ms_sum(v.iter().copied());
    let calls: u64 = r.all.iter().map(|e| e.calls).sum();
    let action = if !r.mostly_layout() {
        "Most reorder time converts data types (f32 <-> bf16) every step: keep weights in the \
         compute type between steps instead of converting on every call: bf16 parameters \
         (`model.to(torch.bfloat16)`) with an f32 master copy in the optimizer \
         (`profilednn.optim.AdamW(..., master=\"f32\")`, or `\"split\"`), or at least one cast \
         per forward pass (`torch.autocast(\"cpu\", dtype=torch.bfloat16)` caches its weight \
         casts by default)."
    } else {
        "Keep one layout end to end: convert model and inputs to channels-last \
         (`model.to(memory_format=torch.channels_last)`, `x.to(memory_format=torch.channels_last)`) \
         so oneDNN's kernels read the framework's tensors directly; the reorders that remain \
         each step are weights into oneDNN's blocked layouts, which `torch.compile` with \
         `torch._inductor.config.freezing` pre-packs for inference only. A detection model (its \
         inputs a list of 3-D images) needs `model.to(memory_format=torch.channels_last)` alone: \
         its transform batches the images, and the first convolution's output is channels-last."
    };
    let f = finding(
        ev,
        ID,
        format!(
            "Reorders take {} of oneDNN time ({:.1} ms in {calls} calls)",
            pct(r.share),
            r.time
        ),
        map(vec![
            ("share", json!(r.share)),
            ("time_ms", json!(r.time)),
            ("calls", json!(calls)),
            ("layout_time_ms", json!(ms(&r.layout))),
            ("conversion_time_ms", json!(ms(&r.convert))),
            ("heaviest", examples(r.all.iter().copied(), 5)),
        ]),
        Some(r.time),
        "all reorder time (a consistent layout removes reorders altogether)",
        action,
    );
    // Only a layout what-if speaks for the layout action; a conversion-bound log keeps its
    // advice.
    let projected = Projected::fastest(ev.projections, |c| {
        !c.bf16 && !c.other && c.layout != Layout::AsLogged
    })
    .filter(|_| r.mostly_layout());
    Ok(match projected {
        Some(p) => {
            let detail = format!(
                "; reorders {:.3} → {:.3} {}",
                p.logged_reorder_ms,
                p.projected_reorder_ms,
                p.unit()
            );
            let what = match p.change.layout {
                Layout::Plain => "a plain layout",
                _ => "channels-last",
            };
            projected::restate(ev, f, p, what, &detail)
        }
        None => f,
    })
}
