//! How a sequence replay allocated each call's buffers, as its results file says: the choices
//! `--allocation` and `--heap` take, and the allocation a logged iteration shows.

use profilednn_model::{Attribute, Primitive};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// How each call's outputs and scratchpad are allocated in a sequence replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// Every tensor allocated once, before the timed iterations.
    Once,
    /// A framework's allocator: each call's scratchpad from the C heap (`malloc`) just before
    /// the call and freed after it; the destination of a weight gradient's copy (`.grad`)
    /// allocated for its call and freed at the end of the iteration.
    PerCall,
}

impl Allocation {
    /// The name `--allocation` takes and the results file writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Allocation::Once => "once",
            Allocation::PerCall => "per-call",
        }
    }

    /// The allocation a logged iteration shows, and why: per call when at least 90 % of its
    /// calls have a user scratchpad (a framework's memory management), once otherwise.
    pub fn of_iteration(calls: &[Arc<Primitive>]) -> (Allocation, String) {
        let user = calls.iter().filter(|p| user_scratchpad(p)).count();
        let n = calls.len();
        if n > 0 && user * 10 >= n * 9 {
            (
                Allocation::PerCall,
                format!("{user} of {n} calls have a user scratchpad: a framework that allocates each call's scratchpad (as PyTorch does)"),
            )
        } else {
            (
                Allocation::Once,
                format!("{user} of {n} calls have a user scratchpad: a program that allocates its buffers once"),
            )
        }
    }
}

fn user_scratchpad(p: &Primitive) -> bool {
    p.attrs
        .items
        .iter()
        .any(|a| matches!(a, Attribute::Scratchpad(m) if m == "user"))
}

/// Where a per-call buffer's pages come from: whether the framework's heap keeps the pages of
/// a freed block for the next request or gives them back to the kernel, so that the next call
/// faults them in again inside its timed run. Which one a training run had is read from its
/// log (`profilednn_dnnl::heap_choice`); the C heap itself is no model of it: in the replay's small
/// heap glibc gives the freed top block back (trim) where PyTorch's, holding live tensors above
/// it, does not, and whether it does changed from run to run (1,640 and 7,330 faults per
/// iteration for one log and binary on an AMD EPYC Zen 4; `docs/projection.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Heap {
    /// Freed buffers kept and handed out again for a request of the same size: no page fault
    /// after the first iteration, as when the framework's heap keeps its pages.
    Warm,
    /// New pages for every buffer (an anonymous map, unmapped when freed): every first touch
    /// in the call is a page fault, as when the framework's heap returns its pages each time.
    Cold,
    /// The C heap (`malloc`/`free`), as replays before the choice existed ran: whether a freed
    /// block's pages go back to the kernel depends on glibc's thresholds and on what else the
    /// replay's heap holds. For comparison only.
    Glibc,
    /// Per problem, as the log shows it (`profilednn_dnnl::heap_choice`): new pages for the buffers of
    /// the problems whose logged calls ran as on new pages (`SequenceTiming::cold`), kept pages
    /// for every other buffer. A framework's heap does not treat all sizes alike (glibc maps
    /// blocks above its threshold afresh and keeps smaller ones), and a what-if's rewritten
    /// calls — a bf16 backward-weights scratchpad twice its f32 one's size — must not take the
    /// new pages that only the log's gradient copies showed.
    AsLogged,
}

impl Heap {
    /// The name `--heap` takes and the results file writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Heap::Warm => "warm",
            Heap::Cold => "cold",
            Heap::Glibc => "glibc",
            Heap::AsLogged => "as-logged",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profilednn_whatif::testing::prim;

    #[test]
    fn a_log_whose_calls_have_user_scratchpads_is_allocated_per_call() {
        let user = prim(
            "cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0,attr-scratchpad:user,,64x3x7x7",
        );
        let library = prim(
            "cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb8a::f0,,,64x3x7x7",
        );
        // 9 of 10 with a user scratchpad: a framework; 8 of 10: not.
        let mut calls = vec![user.clone(); 9];
        calls.push(library.clone());
        assert_eq!(Allocation::of_iteration(&calls).0, Allocation::PerCall);
        calls[0] = library.clone();
        assert_eq!(Allocation::of_iteration(&calls).0, Allocation::Once);
        assert_eq!(Allocation::of_iteration(&[]).0, Allocation::Once);
    }
}
