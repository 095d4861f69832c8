//! How each call's memory is allocated in a sequence replay: as a framework does (`per-call`)
//! or once before the loop, as a C program does; chosen from the log (`--allocation`
//! overrides).
//!
//! PyTorch runs oneDNN with a user scratchpad that its allocator (glibc `malloc`) hands out for
//! each call and takes back after it, and the weight gradients it copies into `.grad` live until
//! the next iteration's `zero_grad`: large ones come back from the kernel as new pages, and
//! every first touch of one is a page fault inside the timed call. Measured on an AMD EPYC Zen 3
//! (2 vCPUs), ResNet-18 64×64 (`fixtures/whatif/train_resnet18.py`, PyTorch 2.15, `getrusage`
//! around each iteration), minor page faults per training iteration:
//!
//! | run | PyTorch | replay, once | replay, per call |
//! |---|---|---|---|
//! | batch 8, 2 threads | 18,515 | 9 | 20,654 |
//! | batch 8, 1 thread | 4,636 | — | 4,822 |
//! | batch 4, 2 threads | 18,514 | — | 18,484 |
//!
//! The faults fall on the backward-weights convolution 512×512×3×3 on 2×2 images
//! (`x64:gemm:jit`, whose 2-thread scratchpad holds a weight-sized buffer per thread: 4,645
//! faults per call replayed, 4,724 in PyTorch's isolated call; 6.0 ms per call replayed once,
//! 9.7 per call, 12.5–15.5 in the logs) and on the copies of its 9.4 MB gradient into `.grad`
//! (`jit_direct_copy`, abcd → abcd: 2.66 ms logged, 0.95 replayed once). Allocating every
//! output per call as well faulted 26,670–32,319 times per iteration (reordered weights too,
//! which PyTorch's heap hands back warm), so only the scratchpad and the gradient copies are.
//! Interleaving real runs with both replays of them (same machine; the real runs themselves
//! moved by up to 1.8× between rounds), per call missed by +47.1, −0.3 % (identity), −4.1,
//! −3.2 % (`--batch 4`), −7.3, +53.2 % (`--threads 1`), once by +18.3, −33.5, −35.4, −34.2,
//! −28.0, +38.5 %.
//!
//! A C program allocates its buffers once: for the C training program of `fixtures/replay`,
//! allocating every output per call made the 2-thread projection +6.7 % (once: −8.1 %) and the
//! `--threads 1` what-if +21.6 % (once: −11.8 %). Which is which, from the log: a framework
//! managing memory gives oneDNN a user scratchpad on every call (PyTorch's ideep does: every exec
//! line of the corpus' and fixtures' PyTorch logs has `attr-scratchpad:user`); C programs and
//! benchdnn leave the default (library) mode on most (3 of 78 calls of the corpus' C program,
//! none of benchdnn's).
//!
//! Whether a freed buffer's pages come back warm is the framework heap's business, not the
//! program's: the per-call buffers come from a [`Heap`] chosen from the log
//! ([`super::heap_choice`]), not from the replay's own C heap.

use super::api::arg::{DST, SCRATCHPAD};
use super::api::{ExecArg, Handle};
use super::run::Prepared;
use super::Session;
use profilednn_replay::allocation::Heap;
use std::alloc::{GlobalAlloc, Layout, System};

/// A per-call buffer, freed (or kept, [`Heap::Warm`]) when dropped.
enum HeapBuffer {
    Malloc { ptr: *mut u8, layout: Layout },
    Map(memmap2::MmapMut),
}

impl HeapBuffer {
    /// Warm and cold buffers are both new anonymous maps, so that they differ only in being
    /// kept ([`Buffers::give`]), whatever the C heap holds.
    fn new(heap: Heap, size: usize) -> Option<HeapBuffer> {
        match heap {
            Heap::Cold | Heap::Warm | Heap::AsLogged => memmap2::MmapMut::map_anon(size.max(1))
                .ok()
                .map(HeapBuffer::Map),
            Heap::Glibc => {
                let layout = Layout::from_size_align(size.max(1), 64).ok()?;
                // SAFETY: a non-zero size and a valid alignment.
                let ptr = unsafe { System.alloc(layout) };
                (!ptr.is_null()).then_some(HeapBuffer::Malloc { ptr, layout })
            }
        }
    }

    fn ptr(&mut self) -> *mut u8 {
        match self {
            HeapBuffer::Malloc { ptr, .. } => *ptr,
            HeapBuffer::Map(m) => m.as_mut_ptr(),
        }
    }

    fn size(&self) -> usize {
        match self {
            HeapBuffer::Malloc { layout, .. } => layout.size(),
            HeapBuffer::Map(m) => m.len(),
        }
    }
}

impl Drop for HeapBuffer {
    fn drop(&mut self) {
        if let HeapBuffer::Malloc { ptr, layout } = *self {
            // SAFETY: allocated by `System` with this layout in `new`, freed once.
            unsafe { System.dealloc(ptr, layout) };
        }
    }
}

/// How long a buffer allocated for a call lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifetime {
    /// Freed right after the call: a scratchpad.
    Call,
    /// To the end of the iteration: a weight gradient's copy into the parameter's `.grad`,
    /// which the optimizer reads after the iteration's oneDNN calls.
    Iteration,
}

/// Which arguments of the call at one position of the iteration are allocated for it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Plan {
    /// Argument indices, each with how long its buffer lives.
    pub outputs: Vec<(usize, Lifetime)>,
    /// This call's buffers take new pages (set only with [`Heap::AsLogged`]: its problem's
    /// logged calls ran as on new pages).
    pub cold: bool,
}

impl Plan {
    /// One plan per position of `order`: each call's scratchpad, and the destination of the
    /// calls at `gradient_copies` (those that copy a weight gradient just computed).
    pub(crate) fn of_iteration(
        order: &[usize],
        prepared: &[Result<Prepared, profilednn_replay::SkipReason>],
        gradient_copies: &std::collections::HashSet<usize>,
    ) -> Vec<Plan> {
        order
            .iter()
            .enumerate()
            .map(|(pos, &i)| Plan {
                outputs: match &prepared[i] {
                    Ok(p) => p
                        .args
                        .iter()
                        .zip(&p.buffers)
                        .enumerate()
                        .filter(|(_, (_, b))| !b.2.is_null())
                        .filter_map(|(k, (a, _))| match a.arg {
                            SCRATCHPAD => Some((k, Lifetime::Call)),
                            DST if gradient_copies.contains(&pos) => Some((k, Lifetime::Iteration)),
                            _ => None,
                        })
                        .collect(),
                    Err(_) => Vec::new(),
                },
                cold: false,
            })
            .collect()
    }
}

/// The per-call allocation of one sequence replay: the plan of each position, the buffers and
/// memories made for the call in progress, and those that live to the end of the iteration.
pub(crate) struct PerCall<'s> {
    s: &'s Session,
    plans: Vec<Plan>,
    call_mems: Vec<Handle>,
    call_buffers: Vec<(HeapBuffer, bool)>,
    iteration_buffers: Vec<(HeapBuffer, bool)>,
    buffers: Buffers,
    /// With [`Heap::AsLogged`], where the buffers of the calls whose plan says `cold` come
    /// from (new pages); every buffer above is paired with whether it came from here.
    cold: Buffers,
}

/// Where [`PerCall`] takes its buffers from and gives them back to.
struct Buffers {
    heap: Heap,
    /// Freed buffers kept for reuse ([`Heap::Warm`]).
    kept: Vec<HeapBuffer>,
}

impl Buffers {
    fn new(heap: Heap) -> Buffers {
        Buffers {
            heap,
            kept: Vec::new(),
        }
    }

    /// A buffer of `size` bytes: a kept one of that size, or a new one.
    fn take(&mut self, size: usize) -> Option<HeapBuffer> {
        let want = size.max(1);
        if let Some(i) = self.kept.iter().position(|b| b.size() == want) {
            return Some(self.kept.swap_remove(i));
        }
        HeapBuffer::new(self.heap, size)
    }

    /// Buffers done with: kept ([`Heap::Warm`], and the kept side of [`Heap::AsLogged`]) or
    /// freed.
    fn give(&mut self, buffers: impl IntoIterator<Item = HeapBuffer>) {
        if matches!(self.heap, Heap::Warm | Heap::AsLogged) {
            self.kept.extend(buffers);
        }
    }
}

impl<'s> PerCall<'s> {
    pub(crate) fn new(s: &'s Session, plans: Vec<Plan>, heap: Heap) -> PerCall<'s> {
        PerCall {
            s,
            plans,
            call_mems: Vec::new(),
            call_buffers: Vec::new(),
            iteration_buffers: Vec::new(),
            buffers: Buffers::new(heap),
            cold: Buffers::new(Heap::Cold),
        }
    }

    /// Where a call's buffers come from and go back to: new pages for a `cold` plan under
    /// [`Heap::AsLogged`], else the replay's heap.
    fn side(&mut self, cold: bool) -> &mut Buffers {
        if cold {
            &mut self.cold
        } else {
            &mut self.buffers
        }
    }

    /// Buffers done with, each back where it came from.
    fn give(&mut self, done: Vec<(HeapBuffer, bool)>) {
        for (b, cold) in done {
            self.side(cold).give([b]);
        }
    }

    /// The arguments of the call at `pos`: `base` with those of its plan in new heap buffers.
    pub(crate) fn before(&mut self, pos: usize, p: &Prepared, base: &[ExecArg]) -> Vec<ExecArg> {
        let mut args = base.to_vec();
        let cold = self.plans[pos].cold;
        for i in 0..self.plans[pos].outputs.len() {
            let (k, life) = self.plans[pos].outputs[i];
            let (md, size, _) = p.buffers[k];
            let Some(mut buf) = self.side(cold).take(size) else {
                continue;
            };
            let mut mem: Handle = std::ptr::null_mut();
            // SAFETY: `md` is an argument descriptor of a prepared primitive (alive while it is)
            // and `buf` a heap buffer of its size, alive until this memory is destroyed in
            // `after` (a call buffer) or later (an iteration buffer).
            let st = unsafe {
                (self.s.dnnl.api.dnnl_memory_create)(&mut mem, md, self.s.engine, buf.ptr().cast())
            };
            if st != 0 {
                self.side(cold).give([buf]);
                continue;
            }
            self.call_mems.push(mem);
            args[k].memory = mem;
            match life {
                Lifetime::Call => self.call_buffers.push((buf, cold)),
                Lifetime::Iteration => self.iteration_buffers.push((buf, cold)),
            }
        }
        args
    }

    /// After the call: its memories destroyed and its call buffers freed.
    pub(crate) fn after(&mut self) {
        for m in self.call_mems.drain(..) {
            // SAFETY: created in `before` for this call; it does not own its buffer.
            unsafe { (self.s.dnnl.api.dnnl_memory_destroy)(m) };
        }
        let done = std::mem::take(&mut self.call_buffers);
        self.give(done);
    }

    /// The end of an iteration: the gradients' copies are freed.
    pub(crate) fn end_iteration(&mut self) {
        let done = std::mem::take(&mut self.iteration_buffers);
        self.give(done);
    }
}

impl Drop for PerCall<'_> {
    fn drop(&mut self) {
        self.after();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minor page faults of this thread so far.
    fn faults() -> i64 {
        // SAFETY: getrusage writes the struct it is given.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            assert_eq!(libc::getrusage(libc::RUSAGE_THREAD, &mut u), 0);
            u.ru_minflt
        }
    }

    /// Page faults of writing every page of a buffer taken from `b`, given back after.
    fn touch(b: &mut Buffers, size: usize) -> (i64, *mut u8) {
        let mut buf = b.take(size).expect("allocated");
        let ptr = buf.ptr();
        let before = faults();
        for i in (0..size).step_by(4096) {
            // SAFETY: inside the buffer of `size` bytes.
            unsafe { ptr.add(i).write_volatile(1) };
        }
        let n = faults() - before;
        b.give(vec![buf]);
        (n, ptr)
    }

    /// 1 MiB (256 pages of 4 KiB; too small for a transparent huge page): a cold heap faults
    /// every page in on every use, a warm one only on the first.
    #[test]
    fn cold_buffers_fault_every_time_and_warm_ones_once() {
        const SIZE: usize = 1 << 20;
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if thp.contains("[always]") {
            // A new map merged with a neighbour could be backed by 2 MiB pages: one fault.
            println!("SKIPPED: transparent huge pages are `always` here, page faults are not 4 KiB pages");
            return;
        }
        let mut cold = Buffers::new(Heap::Cold);
        for _ in 0..3 {
            let (n, _) = touch(&mut cold, SIZE);
            assert!(n >= 200, "{n} faults touching new pages");
        }
        let mut warm = Buffers::new(Heap::Warm);
        let (first, p) = touch(&mut warm, SIZE);
        assert!(first >= 200, "{first} faults on the first use");
        for _ in 0..3 {
            let (n, q) = touch(&mut warm, SIZE);
            assert_eq!(q, p, "the kept buffer is handed out again");
            assert!(n < 8, "{n} faults touching kept pages");
        }
        // Another size is another buffer.
        let (_, q) = touch(&mut warm, SIZE / 2);
        assert_ne!(q, p);
    }
}
