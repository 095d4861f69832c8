//! A rule's finding restated with a what-if projection: the projected gain on this machine
//! replaces the rule of thumb, and a projected slow-down keeps the rule from recommending the
//! change (it says why instead).

use crate::{Evidence, Finding, Projected};

/// `f` with `p`'s figures: `what` names the change (`bf16`), `detail` adds the rule's own
/// figures of the projection (`; reorders 12.0 → 3.0 ms per iteration`).
pub fn restate(ev: &Evidence, mut f: Finding, p: &Projected, what: &str, detail: &str) -> Finding {
    let p = p.with_baseline(ev.projections);
    let sentence = format!("{}{detail}", p.sentence());
    f.title = format!(
        "{}; {what} projected on this machine: {:.1} → {:.1} {} ({}{})",
        f.title,
        p.logged_onednn_ms,
        p.projected_onednn_ms,
        p.unit(),
        p.headline(),
        p.speedup_vs_as_logged_replay
            .map(|x| format!("; {} than the as-logged replay", Projected::factor(x)))
            .unwrap_or_default()
    );
    let iterations = ev.summary.iterations.as_ref().map(|i| i.count);
    let gain = p.gain_ms(iterations);
    f.gain_ms = Some(gain);
    f.gain_ms_per_iteration = if p.per_iteration {
        Some(p.gain_per_unit())
    } else {
        iterations.filter(|n| *n > 0).map(|n| gain / n as f64)
    };
    f.gain_basis = sentence.clone();
    if p.log_polluted.is_some() {
        // A gain in ms is the logged time scaled: as polluted as the log. The as-logged replay,
        // when there is one, still decides (both sides measured here).
        f.gain_ms = None;
        f.gain_ms_per_iteration = None;
        f.gain_basis = format!("withheld, the logged time it scales is in doubt: {sentence}");
        if p.as_logged_replay_ms.is_none() {
            f.projection = Some(p);
            return f;
        }
    }
    if p.is_slower() {
        f.not_recommended = Some(format!(
            "{what} is not recommended here: {sentence}; the rule of thumb does not hold on this \
             machine, measure on the target CPU before changing the training script"
        ));
    }
    f.projection = Some(p);
    f
}
