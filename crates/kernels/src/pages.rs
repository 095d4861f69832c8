//! First touch of a large fresh output buffer with 2 MB pages.
//!
//! A training step allocates a new logits-sized gradient every iteration (254 MB at
//! RetinaNet's head size). Such allocations are fresh `mmap`s, and writing them faults in 4 KB
//! pages one at a time: measured here, that first touch (≈110 ms on one core) costs twice the
//! focal-loss computation itself (≈50 ms). Asking for transparent huge pages on the buffer's
//! 2 MB-aligned interior before writing it cuts the faults 512-fold (fill of a fresh 254 MB
//! tensor: 107 → 24 ms). The advice only changes how not-yet-touched pages are backed; it
//! never changes contents, and failing (no THP, not Linux) is harmless.
//!
//! It is off unless `PROFILEDNN_HUGEPAGES=1`: in a real training loop (RetinaNet, other
//! allocations between steps) huge-page allocation went through the kernel's defragmentation
//! and made each 20 MB gradient *slower* (27 ms vs 3 ms). The Python package avoids the first
//! touch instead by reusing gradient buffers nobody holds any more.

/// Outputs smaller than this are left alone (few faults, and often recycled by malloc).
pub const MIN_BYTES: usize = 8 << 20;

/// Whether the advice is on (`PROFILEDNN_HUGEPAGES=1`).
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(crate::env::huge_pages)
}

/// Advises huge pages for the 2 MB-aligned interior of `[ptr, ptr + bytes)`.
pub fn prefer_huge_pages(ptr: *const u8, bytes: usize) {
    if bytes < MIN_BYTES || !enabled() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (ptr as usize).div_ceil(HUGE) * HUGE;
        let end = (ptr as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: madvise with MADV_HUGEPAGE only sets a paging policy on pages of a
            // mapping the caller owns (the range lies inside its buffer); it cannot change
            // memory contents. Errors (THP disabled, unsupported) are ignored on purpose.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}
