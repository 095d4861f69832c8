//! Large tensors cut into element ranges for the threads of an element-wise step (SGD, Adam,
//! their bf16-state forms; LAMB's two passes, with the trust ratio's norms summed from the
//! pieces' block sums in between — `lamb.rs`).
//!
//! The threads take whole tensors, largest first, each to the least-loaded thread
//! (`for_pieces`). A tensor larger than a thread's share then sets the step's time alone: one
//! 25 M-parameter tensor took 15.9 ms on one thread and 15.9 on two (AMD EPYC Zen 4, 2 vCPUs),
//! and on a server the largest tensor of a model (an embedding, a classifier) bounds the step at
//! any thread count (BERT-base's 23 M-parameter word embedding is a fifth of the model: at 32
//! threads it alone would take 6.8× a thread's share). Each update of SGD and Adam reads and
//! writes only its own element, so a piece is updated exactly as the whole tensor would be: the
//! bits do not depend on the cuts (LAMB's pieces share the tensor's norms, added between its
//! passes from per-block sums: no more depend on the cuts either).

/// Tensors whose update of element `i` reads and writes only element `i` of each of their
/// slices, so that the two halves of a cut are updated independently.
pub(crate) trait Split: Sized {
    /// Elements of the tensor.
    fn len(&self) -> usize;
    /// Elements `..mid` and `mid..` (every slice cut at the same element).
    fn split_at(self, mid: usize) -> (Self, Self);
}

/// An optional slice cut at `mid` (both halves absent when it is).
pub(crate) fn split_option<T>(
    o: Option<&mut [T]>,
    mid: usize,
) -> (Option<&mut [T]>, Option<&mut [T]>) {
    match o.map(|x| x.split_at_mut(mid)) {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    }
}

/// Cuts happen at multiples of this many elements: a whole number of 64-byte lines for f32 and
/// bf16 slices alike, so two threads never write one cache line.
const ALIGN: usize = 64;

/// Pieces below this many elements are not worth a thread's start (the step's fixed cost).
const MIN_PIECE: usize = 1 << 15;

/// `f(piece, 0..len)` over the pieces of `items` ([`split_large`]) on `threads` threads
/// (`for_pieces`): the element-wise steps' one way onto the threads.
pub(crate) fn for_split_pieces<T: Split + Send>(
    items: Vec<T>,
    threads: usize,
    f: impl Fn(&mut T, std::ops::Range<usize>) + Sync,
) {
    let mut pieces = split_large(items, threads);
    let lens: Vec<usize> = pieces.iter().map(Split::len).collect();
    super::for_pieces(&mut pieces, &lens, threads, 1 << 16, f);
}

/// `items` with every tensor larger than a thread's share of the total cut into pieces of at
/// most about that share (about [`MIN_PIECE`] elements at least: a cut is rounded to the
/// alignment), in order.
pub(crate) fn split_large<T: Split>(items: Vec<T>, threads: usize) -> Vec<T> {
    split_large_on(items, threads, ALIGN)
}

/// [`split_large`] with the cuts at multiples of `align` elements (a multiple of [`ALIGN`]:
/// LAMB cuts on its norms' blocks), each tensor's pieces consecutive and in order.
pub(crate) fn split_large_on<T: Split>(items: Vec<T>, threads: usize, align: usize) -> Vec<T> {
    debug_assert!(align.is_multiple_of(ALIGN));
    let total: usize = items.iter().map(Split::len).sum();
    if threads <= 1 || total == 0 {
        return items;
    }
    let share = total.div_ceil(threads).max(MIN_PIECE);
    let mut out = Vec::with_capacity(items.len() + threads);
    for t in items {
        let n = t.len();
        let pieces = n.div_ceil(share).min(n / MIN_PIECE);
        if pieces <= 1 {
            out.push(t);
            continue;
        }
        let mut rest = t;
        let mut left = n;
        for k in (1..pieces).rev() {
            // Equal pieces of what is left, cut on a line.
            let here = (left - left * k / (k + 1)).div_ceil(align) * align;
            if here >= left {
                break;
            }
            let (a, b) = rest.split_at(here);
            out.push(a);
            rest = b;
            left -= here;
        }
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in tensor: the element range it covers.
    #[derive(Debug, PartialEq)]
    struct R(std::ops::Range<usize>);

    impl Split for R {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn split_at(self, mid: usize) -> (R, R) {
            let s = self.0.start;
            (R(s..s + mid), R(s + mid..self.0.end))
        }
    }

    #[test]
    fn large_tensors_are_cut_on_lines_into_shares_and_small_ones_kept() {
        // One 25 M tensor on 2 threads: two pieces, cut on a 64-element boundary.
        let got = split_large(vec![R(0..25_000_000)], 2);
        assert_eq!(got, vec![R(0..12_500_032), R(12_500_032..25_000_000)]);
        // Tensors within a share stay whole; the large one is cut in ⌈n / share⌉ pieces that
        // cover it in order.
        let got = split_large(vec![R(0..1000), R(0..300_000), R(0..50)], 4);
        let share = (301_050usize).div_ceil(4);
        assert_eq!(got[0], R(0..1000));
        assert_eq!(got.last(), Some(&R(0..50)));
        let cut: Vec<_> = got[1..got.len() - 1].iter().map(|r| r.0.clone()).collect();
        assert_eq!(cut.len(), 300_000usize.div_ceil(share));
        assert_eq!(cut.first().unwrap().start, 0);
        assert_eq!(cut.last().unwrap().end, 300_000);
        for w in cut.windows(2) {
            assert_eq!(w[0].end, w[1].start);
            assert_eq!(w[0].end % ALIGN, 0);
        }
        assert!(cut.iter().all(|r| r.len() <= share + ALIGN));
        // One thread, or tensors too small to be worth a thread: nothing is cut.
        assert_eq!(
            split_large(vec![R(0..25_000_000)], 1),
            vec![R(0..25_000_000)]
        );
        assert_eq!(split_large(vec![R(0..40_000)], 8), vec![R(0..40_000)]);
    }

    #[test]
    fn lamb_cuts_fall_on_its_blocks() {
        // 12 500 000 / 4096 = 3051.76: the cut at 3052 blocks.
        let got = split_large_on(vec![R(0..25_000_000)], 2, 4096);
        assert_eq!(got, vec![R(0..12_500_992), R(12_500_992..25_000_000)]);
        let got = split_large_on(vec![R(0..1_000_000), R(0..7)], 3, 4096);
        assert_eq!(got.len(), 4);
        assert!(got[..3].windows(2).all(|w| w[0].0.end == w[1].0.start));
        assert!(got[..2].iter().all(|r| r.0.end % 4096 == 0));
        assert_eq!((got[2].0.end, &got[3]), (1_000_000, &R(0..7)));
    }
}
