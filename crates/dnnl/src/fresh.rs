//! Fresh gradient buffers: a training program that allocates and zero-fills the outputs of its
//! backward calls every iteration, emulated by zero-filling them (untimed) before each call.
//!
//! Measured on the C training program of `fixtures/replay` (1 thread, Xeon model 207, 300
//! iterations, its own log's batch-normalization backward median per call): as written
//! (`new_mem`: allocate + `memset` 0 before every backward call) 0.098–0.118 ms; the same with
//! the `diff_src` buffer allocated once and reused, 0.057–0.074 ms (the replay's 0.059); reused
//! but `memset` to 0 before each call, 0.093–0.095 ms; fresh but freed each iteration (new pages
//! every time), 0.097–0.098 ms; flush-to-zero/denormals-are-zero on, 0.100–0.105 ms. So it is
//! the zero-fill just before the call — 512 KB written through the cache, evicting the call's
//! inputs — not new pages nor denormals, that makes the program's batch-norm backward 1.7× the
//! replay's.
//!
//! The same program makes every reorder's destination the same way (`to_md`: `new_mem`, then
//! the reorder): the destination written by the `memset` is in the cache when the reorder runs.
//! Without the fill the replay's reorders wrote cold destinations: the inner product's weight
//! reorder (10×32×16×16 into `BcdA8b10a`, AMD EPYC Zen 3, 2 threads) replayed at 0.151 ms per
//! call against 0.109 logged (median).
//!
//! Not every framework does this (PyTorch allocates gradients with `empty`, no fill), so the
//! replay does it only when asked: `PROFILEDNN_REPLAY_ZERO_FILL=1`.
//!
//! The program's buffers are also new pages every iteration (`new_mem`, never freed), which
//! the replay's buffers, allocated once, are not. Measured in one process alternating blocks of
//! 10 iterations (AMD EPYC Zen 4, 2 vCPUs): the program as written against its buffers pooled
//! 1.06–1.27× at 2 threads and 1.05–1.12× at 1, in every primitive (the new pages' lines push
//! the kept tensors out of the caches). Moving these outputs to never-used pages of an
//! anonymous map before each fill reproduced that in the program (1.04–1.26×) and in the
//! replay (1.107× at 1 thread, 1.149× at 2), but made the projection worse against fresh logs
//! of a quiet machine (medians over 11–13 logs: kept pages +0.9 % at 1 thread and −4.2 % at 2,
//! new pages +9.2 % and +19.5 %), so the pages stay kept: what else makes the replay slower
//! than the pooled program is not known. Per-buffer unmapping or `madvise(MADV_DONTNEED)`
//! instead overshoot more (each flushes every core's TLB, which the program never does), and
//! after `dnnl_memory_set_data_handle` a memory made with `DNNL_MEMORY_ALLOCATE` has freed its
//! own buffer: an emulation must not touch the old pointer again.

use super::api::arg::{DIFF_BIAS, DIFF_SRC, DIFF_WEIGHTS, DST};
use super::run::Prepared;
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;

/// What a problem of the iteration writes into a fresh buffer each call.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outputs {
    /// A backward call: its gradients (`diff_src`, `diff_weights`, `diff_bias`).
    Gradients,
    /// A reorder: its destination.
    Destination,
    /// Buffers kept across iterations (forward activations).
    Kept,
}

impl Outputs {
    /// What problem `p` (a backward call when `backward`) writes afresh each call.
    pub(crate) fn of(p: &Primitive, backward: bool) -> Outputs {
        use profilednn_model::{PostOpKind, PrimitiveKind};
        // A reorder with a sum post-op reads its destination: not a fresh one.
        let sums = p.attrs.post_ops().iter().any(|o| o.kind == PostOpKind::Sum);
        match p.kind.family() {
            PrimitiveKind::Reorder if !sums => Outputs::Destination,
            _ if backward => Outputs::Gradients,
            _ => Outputs::Kept,
        }
    }
}

/// Per problem of the iteration, the outputs to zero-fill before each of its calls.
pub(crate) struct Fresh(Vec<Vec<(*mut u8, usize)>>);

impl Fresh {
    /// The fresh outputs of each problem (`outputs`), when `PROFILEDNN_REPLAY_ZERO_FILL` is set
    /// (to anything but `0`); else nothing.
    pub(crate) fn of(prepared: &[Result<Prepared, SkipReason>], outputs: &[Outputs]) -> Fresh {
        let on = crate::env::zero_fill();
        Fresh(
            prepared
                .iter()
                .zip(outputs)
                .map(|(p, &out)| match p {
                    Ok(p) if on && out != Outputs::Kept => p
                        .args
                        .iter()
                        .zip(&p.buffers)
                        .filter(|(a, b)| {
                            let fresh = match out {
                                Outputs::Gradients => {
                                    matches!(a.arg, DIFF_SRC | DIFF_WEIGHTS | DIFF_BIAS)
                                }
                                _ => a.arg == DST,
                            };
                            fresh && !b.2.is_null()
                        })
                        .map(|(_, b)| (b.2 as *mut u8, b.1))
                        .collect(),
                    _ => Vec::new(),
                })
                .collect(),
        )
    }

    /// Nothing to fill (a replay that allocates per call: the program allocates, no fill).
    pub(crate) fn none() -> Fresh {
        Fresh(Vec::new())
    }

    /// Zero-fills problem `i`'s gradient outputs, as the program did before the call.
    pub(crate) fn fill(&self, i: usize) {
        for &(ptr, size) in self.0.get(i).into_iter().flatten() {
            // SAFETY: `ptr` is the data handle of one of the problem's own memories, `size`
            // bytes long (its descriptor's size), alive as long as the prepared primitive.
            unsafe { std::ptr::write_bytes(ptr, 0, size) };
        }
    }
}
