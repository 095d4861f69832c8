//! How each call's memory is allocated in a sequence replay: once, before the loop (a C
//! program's buffers; the default), or per call, as a framework does (`--allocation per-call`).
//!
//! PyTorch allocates every operator's outputs, and oneDNN's user scratchpad, from its CPU
//! allocator (glibc `malloc`) just before the call and frees them once used, so a call can write
//! to pages the kernel hands out afresh. Measured on an AMD EPYC Zen 3 (2 vCPUs, ResNet-18 64×64
//! batch 8, PyTorch 2.15, `fixtures/whatif/train_resnet18.py`): 18,515 minor page faults per
//! training iteration at 2 threads. The backward-weights convolution 512×512×3×3 on 2×2 images
//! (`x64:gemm:jit`, 3 calls per iteration: its 2-thread scratchpad holds a weight-sized buffer
//! per thread) took 12.5–15.5 ms per call in the log and 6.0 ms replayed with buffers allocated
//! once (0 faults); allocated per call from the same `malloc`, 4,645 faults per call (PyTorch's
//! isolated call: 4,724) and 9.7 ms. No other call of the iteration faults either way.
//!
//! Not the default: in four rounds interleaving a real run with both replays of it (same
//! machine, noisy), the per-call projection of the whole iteration missed the real run by
//! +16, −4, +23, +26 %, allocation once by −13, −24, −2, −5 %; and the C training program, which
//! allocates its buffers once, went from −8.1 % to +6.7 % (2 threads), its `--threads 1` what-if
//! from −11.8 % to +21.6 %.

use super::api::arg::{
    DIFF_BIAS, DIFF_SRC, DIFF_SRC_1, DIFF_SRC_2, DIFF_SRC_3, DIFF_WEIGHTS, DIFF_WEIGHTS_1,
    DIFF_WEIGHTS_2, DIFF_WEIGHTS_3, DST, DST_1, DST_2, SCRATCHPAD, WORKSPACE,
};
use super::api::{ExecArg, Handle};
use super::run::Prepared;
use super::Session;
use serde::{Deserialize, Serialize};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;

/// How each call's outputs and scratchpad are allocated in a sequence replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// Every tensor allocated once, before the timed iterations.
    Once,
    /// Each call's outputs and scratchpad allocated from the C heap (`malloc`) just before the
    /// call, freed after their last reader in the iteration: a framework's allocator.
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
}

/// Whether argument `arg` is written by the call (so a framework allocates it for the call):
/// the destinations of a forward call (a destination a sum post-op reads keeps its buffer), the
/// gradients of a backward one, a forward workspace, and the scratchpad.
pub(crate) fn is_output(arg: std::ffi::c_int, backward: bool, sums_into_dst: bool) -> bool {
    match arg {
        SCRATCHPAD => true,
        DST_1 | DST_2 => !backward,
        DST => !backward && !sums_into_dst,
        WORKSPACE => !backward,
        DIFF_SRC | DIFF_SRC_1 | DIFF_SRC_2 | DIFF_SRC_3 | DIFF_WEIGHTS | DIFF_WEIGHTS_1
        | DIFF_WEIGHTS_2 | DIFF_WEIGHTS_3 | DIFF_BIAS => backward,
        _ => false,
    }
}

/// A buffer from the C heap, freed when dropped.
struct HeapBuffer {
    ptr: *mut u8,
    layout: Layout,
}

impl HeapBuffer {
    fn new(size: usize) -> Option<HeapBuffer> {
        let layout = Layout::from_size_align(size.max(1), 64).ok()?;
        // SAFETY: a non-zero size and a valid alignment.
        let ptr = unsafe { System.alloc(layout) };
        (!ptr.is_null()).then_some(HeapBuffer { ptr, layout })
    }
}

impl Drop for HeapBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `System` with this layout in `new`, freed once.
        unsafe { System.dealloc(self.ptr, self.layout) };
    }
}

/// The per-call allocation of one sequence replay: the buffers alive between their producer and
/// their last reader, and the memories made for one call.
pub(crate) struct PerCall<'s> {
    s: &'s Session,
    /// Buffers written by a call (position, argument index) and read later in the iteration.
    live: HashMap<(usize, usize), HeapBuffer>,
    /// Memories and buffers of the call in progress, released by [`PerCall::after`].
    call_mems: Vec<Handle>,
    call_buffers: Vec<HeapBuffer>,
}

/// What the call at one position of the iteration reads from earlier calls, which of its
/// arguments are allocated for it, and which earlier outputs it reads last.
#[derive(Default)]
pub(crate) struct Plan {
    /// (argument index of this call, producer position, producer's argument index).
    pub sources: Vec<(usize, usize, usize)>,
    /// Argument indices allocated for the call, each with whether a later call reads it (else
    /// it is freed right after the call).
    pub outputs: Vec<(usize, bool)>,
    /// Producer outputs (position, argument index) whose last reader is this call.
    pub last_reads: Vec<(usize, usize)>,
}

impl Plan {
    /// One plan per position of `order`: `sources` as the tensor flow bound them, `outputs`
    /// from each problem's arguments (`backward`, `sums`: whether the problem is a backward
    /// one, and whether a sum post-op reads its destination).
    pub(crate) fn of_iteration(
        order: &[usize],
        prepared: &[Result<Prepared, super::SkipReason>],
        backward: &[bool],
        sums: &[bool],
        sources: &HashMap<usize, Vec<(usize, usize, usize)>>,
    ) -> Vec<Plan> {
        let mut last_read: HashMap<(usize, usize), usize> = HashMap::new();
        for (&pos, srcs) in sources {
            for &(_, from, from_k) in srcs {
                let e = last_read.entry((from, from_k)).or_insert(pos);
                *e = (*e).max(pos);
            }
        }
        let mut plans: Vec<Plan> = order
            .iter()
            .enumerate()
            .map(|(pos, &i)| {
                let outputs = match &prepared[i] {
                    Ok(p) => p
                        .args
                        .iter()
                        .enumerate()
                        .filter(|(k, a)| {
                            is_output(a.arg, backward[i], sums[i]) && !p.buffers[*k].2.is_null()
                        })
                        .map(|(k, _)| (k, last_read.contains_key(&(pos, k))))
                        .collect(),
                    Err(_) => Vec::new(),
                };
                Plan {
                    sources: sources.get(&pos).cloned().unwrap_or_default(),
                    outputs,
                    last_reads: Vec::new(),
                }
            })
            .collect();
        for (key, pos) in last_read {
            plans[pos].last_reads.push(key);
        }
        plans
    }
}

impl<'s> PerCall<'s> {
    pub(crate) fn new(s: &'s Session) -> PerCall<'s> {
        PerCall {
            s,
            live: HashMap::new(),
            call_mems: Vec::new(),
            call_buffers: Vec::new(),
        }
    }

    /// The arguments of the call at `pos`: `base` with its outputs in fresh heap buffers and its
    /// inputs read from the buffers their producers wrote in this iteration.
    pub(crate) fn before(
        &mut self,
        pos: usize,
        p: &Prepared,
        base: &[ExecArg],
        plan: &Plan,
    ) -> Vec<ExecArg> {
        let mut args = base.to_vec();
        for &(k, read_later) in &plan.outputs {
            let (md, size, _) = p.buffers[k];
            let Some(buf) = HeapBuffer::new(size) else {
                continue;
            };
            let Some(mem) = self.memory(md, buf.ptr) else {
                continue;
            };
            args[k].memory = mem;
            if read_later {
                self.live.insert((pos, k), buf);
            } else {
                self.call_buffers.push(buf);
            }
        }
        for &(k, from, from_k) in &plan.sources {
            let Some(ptr) = self.live.get(&(from, from_k)).map(|b| b.ptr) else {
                continue;
            };
            if let Some(mem) = self.memory(p.buffers[k].0, ptr) {
                args[k].memory = mem;
            }
        }
        args
    }

    /// After the call: its memories destroyed, its scratchpad and unread outputs freed, and the
    /// outputs it was the last reader of.
    pub(crate) fn after(&mut self, plan: &Plan) {
        for m in self.call_mems.drain(..) {
            // SAFETY: created by `memory` for this call; it does not own its buffer.
            unsafe { (self.s.dnnl.api.dnnl_memory_destroy)(m) };
        }
        self.call_buffers.clear();
        for key in &plan.last_reads {
            self.live.remove(key);
        }
    }

    /// The end of an iteration: what is still alive (read by a call that failed) is freed.
    pub(crate) fn end_iteration(&mut self) {
        self.live.clear();
    }

    fn memory(&mut self, md: Handle, ptr: *mut u8) -> Option<Handle> {
        let mut mem: Handle = std::ptr::null_mut();
        // SAFETY: `md` is an argument descriptor of a prepared primitive (alive while it is)
        // and `ptr` a heap buffer of at least its size (producer and reader sizes match: the
        // flow binds by size), alive until this memory is destroyed in `after`.
        let st = unsafe {
            (self.s.dnnl.api.dnnl_memory_create)(&mut mem, md, self.s.engine, ptr.cast())
        };
        (st == 0).then(|| {
            self.call_mems.push(mem);
            mem
        })
    }
}

impl Drop for PerCall<'_> {
    fn drop(&mut self) {
        self.after(&Plan::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_what_the_call_writes() {
        // Forward: destinations, workspace, scratchpad; a destination a sum post-op reads is
        // an input too.
        assert!(is_output(DST, false, false));
        assert!(!is_output(DST, false, true));
        assert!(is_output(WORKSPACE, false, false));
        assert!(is_output(SCRATCHPAD, false, false));
        assert!(!is_output(super::super::api::arg::SRC, false, false));
        // Backward: the gradients; its destination (eltwise's `use_dst`) and workspace are read.
        assert!(is_output(DIFF_SRC, true, false));
        assert!(is_output(DIFF_WEIGHTS, true, false));
        assert!(is_output(DIFF_BIAS, true, false));
        assert!(!is_output(DST, true, false));
        assert!(!is_output(WORKSPACE, true, false));
        assert!(!is_output(super::super::api::arg::DIFF_DST, true, false));
    }
}
