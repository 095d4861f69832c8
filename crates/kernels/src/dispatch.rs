//! Runtime choice of the instruction set, and the thread split.

/// The instruction set a kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Portable,
}

impl Isa {
    /// The best the CPU has (`PROFILEDNN_ISA=avx2|portable` forces a lower one, for testing).
    pub fn detect() -> Isa {
        let forced = std::env::var("PROFILEDNN_ISA").ok();
        #[cfg(target_arch = "x86_64")]
        {
            let want = |name: &str| forced.as_deref().is_none_or(|f| f == name);
            if want("avx512") && is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if (want("avx2") || forced.as_deref() == Some("avx512"))
                && is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
            {
                return Isa::Avx2;
            }
        }
        let _ = forced;
        Isa::Portable
    }

    pub fn name(&self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }
}

/// Splits `0..n` into `parts` contiguous ranges whose boundaries are multiples of `align`.
pub fn split(n: usize, parts: usize, align: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1);
    let per = n.div_ceil(parts).div_ceil(align) * align;
    (0..parts)
        .map(|i| (i * per).min(n)..((i + 1) * per).min(n))
        .filter(|r| !r.is_empty())
        .collect()
}

/// Generates `$name(isa, args…)` that calls `$body` compiled for the chosen instruction set.
#[macro_export]
macro_rules! dispatch {
    ($vis:vis fn $name:ident($($arg:ident : $ty:ty),*) -> $ret:ty $body:block) => {
        #[allow(clippy::too_many_arguments)]
        $vis fn $name(isa: $crate::Isa, $($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn body($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
            unsafe fn avx512($($arg: $ty),*) -> $ret { body($($arg),*) }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2($($arg: $ty),*) -> $ret { body($($arg),*) }
            match isa {
                // SAFETY: `Isa::detect` only returns an ISA the CPU has.
                #[cfg(target_arch = "x86_64")]
                $crate::Isa::Avx512 => unsafe { avx512($($arg),*) },
                #[cfg(target_arch = "x86_64")]
                $crate::Isa::Avx2 => unsafe { avx2($($arg),*) },
                _ => body($($arg),*),
            }
        }
    };
}
