//! Fused optimizer steps over many parameter tensors: SGD, Adam/AdamW, LAMB, with torch.optim's
//! semantics. Each tensor is read and written once per step (LAMB twice: its trust ratio needs
//! the norms of the whole tensor before the update).
//!
//! Parameters are f32, or bf16 with an f32 master copy, or bf16 "split" (the bf16 parameter is
//! the top 16 bits of the f32 master, the bottom 16 bits are kept apart: the master costs no
//! extra memory traffic over an f32 parameter), or bf16 with bf16 state and no master, as
//! torch's `fused=True` keeps them (`bf16_state`: the fewest bytes, updates below half a bf16
//! ulp lost).

/// Expands `$go!(first, nesterov, extra…)` with SGD's two flags as literals: matched once,
/// outside the loop that `$go` writes, so each loop is branch-free. `extra` tokens (other
/// literals the caller has already matched) are passed on as they are.
macro_rules! with_sgd_flags {
    ($first:expr, $nesterov:expr, $go:ident $(, $extra:tt)*) => {
        match ($first, $nesterov) {
            (true, true) => $go!(true, true $(, $extra)*),
            (true, false) => $go!(true, false $(, $extra)*),
            (false, true) => $go!(false, true $(, $extra)*),
            (false, false) => $go!(false, false $(, $extra)*),
        }
    };
}

mod adam;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod bf16_state;
mod lamb;
mod sgd;
mod split;
mod store;

pub use adam::{adam_step, AdamConfig, AdamState};
pub use bf16_state::{adam_step_bf16, sgd_step_bf16, AdamBf16State, SgdBf16Tensor};
pub use lamb::{lamb_step, LambConfig};
pub use sgd::{sgd_step, SgdConfig, SgdTensor};
pub use store::{Grad, Params};

/// The code path the optimizer steps take on `isa`, for benchmark output.
pub fn path(isa: crate::Isa) -> String {
    #[cfg(target_arch = "x86_64")]
    let hand = if isa.level() == crate::Level::Avx512 {
        format!(
            "f32 SGD-with-momentum, Adam/AdamW and LAMB by hand-written loops {} software prefetch, the rest ",
            if avx512::software_prefetch() { "with" } else { "without" }
        )
    } else {
        String::new()
    };
    #[cfg(not(target_arch = "x86_64"))]
    let hand = String::new();
    format!(
        "{} ({hand}auto-vectorized for this level; bf16 rounded by integer round-to-nearest-even)",
        isa.name()
    )
}

/// Runs `f(tensor, 0..len)` over every tensor, on `threads` threads, each tensor on one thread
/// (the element-wise steps cut the large ones into pieces first: `split`); serially when one
/// thread is asked for or there is a single tensor of at most `piece` elements. Which thread
/// updates a tensor does not change its bits.
pub(crate) fn for_pieces<T: Send>(
    items: &mut [T],
    lens: &[usize],
    threads: usize,
    piece: usize,
    f: impl Fn(&mut T, std::ops::Range<usize>) + Sync,
) {
    if threads <= 1 || items.len() <= 1 && lens.first().is_none_or(|l| *l <= piece) {
        for (it, &n) in items.iter_mut().zip(lens) {
            f(it, 0..n);
        }
        return;
    }
    // Whole tensors (or pieces) per thread, balanced by size: largest first, each to the
    // least-loaded thread. Assigning contiguous runs by position instead left one thread with
    // 56 % of a ResNeXt-sized parameter set (a big tensor straddling the midpoint). The result
    // does not depend on the assignment: each tensor's update is computed by one thread.
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| lens[b].cmp(&lens[a]).then(a.cmp(&b)));
    let mut owner = vec![0usize; items.len()];
    let mut load = vec![0usize; threads];
    for i in order {
        let g = (0..threads).min_by_key(|&g| (load[g], g)).unwrap_or(0);
        owner[i] = g;
        load[g] += lens[i].max(1);
    }
    let mut groups: Vec<Vec<(&mut T, usize)>> = (0..threads).map(|_| Vec::new()).collect();
    for ((it, &n), &g) in items.iter_mut().zip(lens).zip(&owner) {
        groups[g].push((it, n));
    }
    crate::pool::map(groups, threads, |g| {
        for (it, n) in g {
            f(it, 0..n);
        }
    });
}

/// Whether the gradient goes into the momentum as it is: `sign`, `wd`, `damp` (the factors of
/// `one`) are 1, 0, 1. A step with momentum then leaves out their multiplies and the add (the
/// hand-written loop the same: `avx512::sgd_body`), as torch leaves out a zero weight decay:
/// the same values for every finite parameter and gradient, and there the zero's sign and an
/// infinite parameter's update come out as torch's (0·∞ is not added). The other forms
/// (maximize, dampening, no momentum, `bf16_state`) still add 0·p when the decay is 0.
fn plain(sign: f32, wd: f32, damp: f32) -> bool {
    sign == 1.0 && wd == 0.0 && damp == 1.0
}
