//! Runtime choice of the instruction set, and the thread split.

/// The instruction set a kernel runs with: a proof that the CPU has it (see `profilednn-isa`).
/// `Isa::detect()` honours `PROFILEDNN_ISA=avx2|portable`; `Isa::available()` lists every
/// path this CPU can run, which the tests iterate over.
pub use profilednn_isa::{Isa, Level};

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
            #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
            unsafe fn avx512($($arg: $ty),*) -> $ret { body($($arg),*) }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2($($arg: $ty),*) -> $ret { body($($arg),*) }
            match isa.level() {
                // SAFETY: an `Isa` is only made by detection (or an unsafe constructor whose
                // caller vouches for the CPU), and the AVX-512 level checks every feature
                // `avx512` is compiled for.
                #[cfg(target_arch = "x86_64")]
                $crate::Level::Avx512 => unsafe { avx512($($arg),*) },
                // SAFETY: as above; the AVX2 level checks avx2 and fma.
                #[cfg(target_arch = "x86_64")]
                $crate::Level::Avx2 => unsafe { avx2($($arg),*) },
                _ => body($($arg),*),
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Level;
    use std::collections::BTreeSet;

    /// The features `dispatch!` compiles each path for are the ones its `Level` detects: the
    /// attribute needs a literal, so this test is what keeps the two from drifting (the
    /// AVX-512 path once lacked `avx512dq`, which the level checks).
    #[test]
    fn dispatch_compiles_each_path_for_its_levels_features() {
        let src = include_str!("dispatch.rs");
        let enabled = |fn_name: &str| -> BTreeSet<String> {
            let at = src.find(&format!("unsafe fn {fn_name}(")).unwrap();
            let attr = src[..at].rfind("enable = \"").unwrap() + "enable = \"".len();
            let end = attr + src[attr..].find('"').unwrap();
            src[attr..end].split(',').map(str::to_string).collect()
        };
        for (name, level) in [("avx512", Level::Avx512), ("avx2", Level::Avx2)] {
            let want: BTreeSet<String> = level.features().iter().map(|f| f.to_string()).collect();
            assert_eq!(enabled(name), want, "{name}");
        }
    }
}
