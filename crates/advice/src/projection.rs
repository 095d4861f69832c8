//! What-if projections given to the rules as plain data.
//!
//! A rule of thumb ("bf16 halves the compute time") is wrong on a CPU whose bf16 is emulated,
//! and "channels-last removes the reorders" says nothing of what the kernels then cost. A
//! what-if replay (`profilednn replay LOG --as bf16 …`) measures the change on this machine;
//! the CLI projects it (`profilednn project`'s figures) and hands the figures to the rules here.
//! Plain data, so that this crate stays below the replay crate: it never runs oneDNN itself.

use serde::Serialize;

/// Activation layout a what-if ran with.
pub use profilednn_model::ActivationLayout as Layout;

/// What a what-if changed, as far as the rules need to know to pick the one they speak for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Change {
    /// Compute primitives in bf16 (`--as bf16`).
    pub bf16: bool,
    pub layout: Layout,
    /// Anything else that changes the work or the resources of an iteration (`--as f32` on a
    /// bf16 log, `--batch`, `--threads`): its time is not comparable with the logged one for
    /// the rules' purpose, so no rule uses it.
    pub other: bool,
}

impl Change {
    /// `replay` options that produce this change (`--as bf16 --layout channels-last`).
    pub fn options(&self) -> String {
        let mut v = Vec::new();
        if self.bf16 {
            v.push("--as bf16");
        }
        match self.layout {
            Layout::AsLogged => {}
            Layout::ChannelsLast => v.push("--layout channels-last"),
            Layout::Plain => v.push("--layout plain"),
        }
        v.join(" ")
    }
}

/// One what-if's projection of this log onto this machine: the figures `profilednn project`
/// prints for the same log and replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Projected {
    /// The what-if, as `project` names it (`--as bf16 --layout channels-last --threads 1`).
    pub transform: String,
    #[serde(skip)]
    pub change: Change,
    /// Where the replay came from: its file, or `advise --project` (run in process).
    pub replay: String,
    /// `true`: the figures are per iteration; `false`: over the whole log (no iteration count).
    pub per_iteration: bool,
    /// The log's steady-state oneDNN time.
    pub logged_onednn_ms: f64,
    /// The rewritten iteration replayed here.
    pub projected_onednn_ms: f64,
    /// `logged / projected`: above 1 a speed-up, below 1 a slow-down.
    pub speedup: f64,
    /// Reorder time, logged and projected (autocast's casts included on the projected side).
    pub logged_reorder_ms: f64,
    pub projected_reorder_ms: f64,
    /// The oneDNN the replay ran with (and the CPU), which the projection stands on.
    pub replayed_with: String,
    /// The as-logged replay's time with the same oneDNN on the same CPU, when one was given:
    /// the like-for-like baseline of the change (the log's own oneDNN — PyTorch bundles its
    /// own — may be faster or slower than the replaying one for reasons that are not the
    /// change's). Set by the rule that used it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_logged_replay_ms: Option<f64>,
    /// `as_logged_replay_ms / projected_onednn_ms`: the change's own speed-up, which decides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_vs_as_logged_replay: Option<f64>,
    /// What of the rewritten iteration oneDNN cannot run on this CPU at all (`12 of 158 calls
    /// per iteration: oneDNN has no bf16 implementation on this CPU (avx2)`): the framework
    /// would run those calls outside oneDNN, so the projected time is no estimate of the
    /// change and the change is not recommended here, whatever the figures say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_here: Option<String>,
    /// Why the speed-up against the log is not headlined: the log's own timings look polluted
    /// (`timings-polluted`), so `logged_onednn_ms`, and every ratio and gain built on it, is
    /// noise (a newcomer's busy machine gave "125× faster" for channels-last). Set by
    /// [`crate::advise`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_polluted: Option<String>,
}

impl Projected {
    /// `speedup` from the two times (0 when the projection is empty).
    pub fn speedup_of(logged_ms: f64, projected_ms: f64) -> f64 {
        if projected_ms > 0.0 {
            logged_ms / projected_ms
        } else {
            0.0
        }
    }

    /// `ms per iteration`, or `ms` over the whole log.
    pub fn unit(&self) -> &'static str {
        if self.per_iteration {
            "ms per iteration"
        } else {
            "ms"
        }
    }

    /// The change's speed-up: against the as-logged replay when there is one, else against
    /// the log.
    pub fn deciding_speedup(&self) -> f64 {
        self.speedup_vs_as_logged_replay.unwrap_or(self.speedup)
    }

    /// A slow-down (or no change at all) is not worth recommending, nor a change oneDNN cannot
    /// run on this CPU.
    pub fn is_slower(&self) -> bool {
        self.unavailable_here.is_some() || self.deciding_speedup() <= 1.0
    }

    /// The speed-up against the log as a headline: [`Projected::factor`], or why it is
    /// withheld.
    pub fn headline(&self) -> String {
        match &self.log_polluted {
            Some(why) => format!("speed-up withheld: {why}"),
            None => Self::factor(self.speedup),
        }
    }

    /// `1.31× faster` / `8.20× slower`.
    pub fn factor(speedup: f64) -> String {
        if speedup <= 1.0 && speedup > 0.0 {
            format!("{:.2}× slower", 1.0 / speedup)
        } else {
            format!("{speedup:.2}× faster")
        }
    }

    /// This projection with `all`'s as-logged replay of the same oneDNN and CPU as its
    /// baseline, when there is one.
    pub fn with_baseline(&self, all: &[Projected]) -> Projected {
        let mut p = self.clone();
        if let Some(b) = all.iter().find(|b| {
            b.change == Change::default()
                && b.replayed_with == self.replayed_with
                && b.per_iteration == self.per_iteration
                && b.projected_onednn_ms > 0.0
        }) {
            p.as_logged_replay_ms = Some(b.projected_onednn_ms);
            p.speedup_vs_as_logged_replay = Some(Self::speedup_of(
                b.projected_onednn_ms,
                p.projected_onednn_ms,
            ));
        }
        p
    }

    /// `projected on this machine by `replay --as bf16 …` (oneDNN 3.2): 46.9 → 120.3 ms per
    /// iteration (2.56× slower)`.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "projected on this machine by `replay {}` ({}): {:.3} → {:.3} {} ({})",
            self.transform,
            self.replayed_with,
            self.logged_onednn_ms,
            self.projected_onednn_ms,
            self.unit(),
            self.headline()
        );
        if let (Some(a), Some(x)) = (self.as_logged_replay_ms, self.speedup_vs_as_logged_replay) {
            s += &format!(
                "; against the as-logged replay with the same oneDNN: {a:.3} → {:.3} ({}), which decides",
                self.projected_onednn_ms,
                Self::factor(x)
            );
        }
        if let Some(u) = &self.unavailable_here {
            s += &format!(
                "; {u}: the framework would run them outside oneDNN, so this time is no estimate of the change"
            );
        }
        s
    }

    /// The oneDNN time a recommended change saves over the whole log, for a finding's `gain_ms`
    /// (`iterations`: the log's count, the divisor of per-iteration gains).
    /// Without a baseline, `logged − projected`; with one, the change's own relative gain
    /// applied to the logged time.
    pub fn gain_ms(&self, iterations: Option<u64>) -> f64 {
        let per = self.gain_per_unit();
        match (self.per_iteration, iterations) {
            (true, Some(n)) => per * n as f64,
            _ => per,
        }
    }

    /// The gain in [`Projected::unit`]s.
    pub fn gain_per_unit(&self) -> f64 {
        match self.as_logged_replay_ms {
            Some(a) if a > 0.0 => self.logged_onednn_ms * (1.0 - self.projected_onednn_ms / a),
            _ => self.logged_onednn_ms - self.projected_onednn_ms,
        }
    }

    /// Of `all`, the fastest projection `wanted` accepts.
    pub fn fastest(all: &[Projected], wanted: impl Fn(&Change) -> bool) -> Option<&Projected> {
        all.iter()
            .filter(|p| wanted(&p.change))
            .min_by(|a, b| a.projected_onednn_ms.total_cmp(&b.projected_onednn_ms))
    }
}

/// A rule that stayed quiet because its change is projected slower on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct NotRecommended {
    pub id: &'static str,
    /// Why it stayed quiet, with the figures.
    pub why: String,
    /// The projection that showed it slower; absent when the measured rates of the machine
    /// profile did (`f32-on-bf16-hardware` with bf16 slower than f32 and no projection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projected>,
}
