//! Denormal gradients flushed to zero.
//!
//! The focal loss's gradient for an easy negative scales with p^γ: at logits below about −44
//! (γ = 2) it falls under f32's smallest normal number. Written out as denormals, those values
//! made every op that read them afterwards slow: x86 cores take a microcode assist for each
//! denormal operand. In `python/examples/optimize_check.py --models focal_head` (Xeon family 6
//! model 207), training steps 3–5 pushed the head's logits there: the step went from 16 ms to
//! 43–74 ms (the backward's scaling by the loss's 1/100 and the convolution's backward), and
//! `optimize` measured the fused loss slower than torchvision's. Values under 1.2e-38 carry
//! nothing a gradient step can use; a CPU's flush-to-zero mode (FTZ, DAZ) writes them as 0,
//! and reads denormal logits as 0, for free in the vector units.

/// Runs `f` with the calling thread's SSE/AVX control set to flush denormal results to zero
/// and read denormal operands as zero, then restores the caller's setting (PyTorch's own
/// `torch.set_flush_denormal` is left as the user chose it).
pub fn flushing_denormals<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        /// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
        const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);
        let old = mxcsr();
        if old & FTZ_DAZ == FTZ_DAZ {
            return f();
        }
        set_mxcsr(old | FTZ_DAZ);
        // Restored even when `f` panics (the pool re-raises a job's panic on the caller).
        struct Restore(u32);
        impl Drop for Restore {
            fn drop(&mut self) {
                set_mxcsr(self.0);
            }
        }
        let _restore = Restore(old);
        f()
    }
    #[cfg(not(target_arch = "x86_64"))]
    f()
}

#[cfg(target_arch = "x86_64")]
fn mxcsr() -> u32 {
    let mut v: u32 = 0;
    // SAFETY: stmxcsr stores the 32-bit control register to the given address (SSE, part of
    // x86-64's baseline).
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut v as *mut u32, options(nostack, preserves_flags));
    }
    v
}

#[cfg(target_arch = "x86_64")]
fn set_mxcsr(v: u32) {
    // SAFETY: ldmxcsr loads a value read from the register itself with only bits 6 and 15
    // (defined control bits) changed; a reserved bit set would fault.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &v as *const u32, options(nostack, readonly, preserves_flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denormal_results_are_zero_inside_and_the_mode_is_restored_after() {
        let tiny = std::hint::black_box(f32::MIN_POSITIVE);
        let half = std::hint::black_box(0.5f32);
        // Outside: the product is a denormal, as IEEE 754 says.
        assert!((tiny * half).is_subnormal());
        let inside = flushing_denormals(|| std::hint::black_box(tiny) * std::hint::black_box(half));
        assert_eq!(inside, 0.0);
        assert!((std::hint::black_box(tiny) * std::hint::black_box(half)).is_subnormal());
        // Restored on a panic too.
        let _ = std::panic::catch_unwind(|| flushing_denormals(|| panic!("job failed")));
        assert!((std::hint::black_box(tiny) * std::hint::black_box(half)).is_subnormal());
    }
}
