//! The oneDNN what-if replays `advise --project` runs for the rules: which distinct changes,
//! with what replay options, and what it says when none is wanted. The replays themselves run
//! in the CLI (a terminal's progress bars).

use profilednn_advice::{Change, WantedWhatIf};
use profilednn_whatif::{Precision, WhatIf};

/// The replay options of an advice what-if.
pub fn what_if(c: &Change) -> WhatIf {
    WhatIf {
        precision: c.bf16.then_some(Precision::Bf16),
        layout: c.layout,
        batch: None,
    }
}

/// What `--project` says when no oneDNN what-if is wanted. With a trace the whole step is still
/// replayed through PyTorch afterwards (`whole-step-bf16`), which takes minutes: the message
/// must not say that nothing is replayed (it did, then spent 127 s replaying).
pub fn nothing_to_replay(whole_step: bool) -> String {
    let none = "--project: no oneDNN-level rule needs a what-if replay on this log (none of the \
                projection-aware rules is over its threshold)";
    if whole_step {
        format!(
            "{none}; the whole step is replayed through PyTorch (--torch-trace), as recorded and \
             in bf16, for whole-step-bf16"
        )
    } else {
        format!("{none}: nothing is replayed")
    }
}

/// The distinct changes `wanted` asks for, each with the rules that want it, in the order first
/// wanted: each is replayed once however many rules judge it.
pub fn distinct(wanted: &[WantedWhatIf]) -> Vec<(Change, Vec<&'static str>)> {
    let mut todo: Vec<(Change, Vec<&'static str>)> = Vec::new();
    for w in wanted {
        match todo.iter_mut().find(|(c, _)| *c == w.change) {
            Some((_, rules)) => rules.push(w.rule),
            None => todo.push((w.change, vec![w.rule])),
        }
    }
    todo
}

#[cfg(test)]
mod tests {
    use super::nothing_to_replay;

    #[test]
    fn the_message_says_what_is_still_replayed() {
        let with_trace = nothing_to_replay(true);
        assert!(with_trace.contains("no oneDNN-level rule needs a what-if replay"));
        assert!(with_trace.contains("the whole step is replayed through PyTorch"));
        assert!(!with_trace.contains("nothing is replayed"));
        let without = nothing_to_replay(false);
        assert!(without.ends_with("nothing is replayed"), "{without}");
        assert!(!without.contains("PyTorch"));
    }
}
