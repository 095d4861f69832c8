//! Every environment variable this crate reads, read here and only here (`PROFILEDNN_ISA` is
//! `profilednn-isa`'s): each is a switch for comparing two code paths that compute the same
//! bits, or an opt-in, never what may run on the CPU.

/// A per-vendor code choice an environment variable overrides: `true` when `var` reads `on`,
/// `false` when it reads `off`, else `default` (used where AMD's and Intel's cores were
/// measured to want different code for the same result). The variables:
/// `PROFILEDNN_PREFETCH=1|0` (the optimizers' software prefetches),
/// `PROFILEDNN_FOCAL_PREFETCH_TARGETS=1|0`, `PROFILEDNN_FOCAL_PREFETCH_F32=1|0` and `PROFILEDNN_FOCAL_LOOKUP=scalar|gather` (the
/// focal loss's AVX-512 loop).
pub(crate) fn switch(var: &str, on: &str, off: &str, default: impl FnOnce() -> bool) -> bool {
    match std::env::var(var).as_deref().map(str::trim) {
        Ok(v) if v == on => true,
        Ok(v) if v == off => false,
        _ => default(),
    }
}

/// `PROFILEDNN_BF16=int`: the focal loss rounds to bf16 with integer instructions even where
/// the CPU has AVX512-BF16 (to compare both paths).
pub(crate) fn bf16_integer_rounding() -> bool {
    std::env::var("PROFILEDNN_BF16").is_ok_and(|v| v.trim().eq_ignore_ascii_case("int"))
}

/// `PROFILEDNN_HUGEPAGES=1`: large outputs are advised onto huge pages.
pub(crate) fn huge_pages() -> bool {
    std::env::var("PROFILEDNN_HUGEPAGES").is_ok_and(|v| v == "1")
}
