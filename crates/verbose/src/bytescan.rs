//! Byte-class checks on whole lines, with runtime CPU-feature dispatch.
//!
//! Every verbose line must be checked for bytes that cannot be in clean ASCII text (control
//! characters, bytes ≥ 0x80). The check is a branch-free fold the compiler vectorises; compiled
//! once per ISA and chosen at run time, so one binary runs everywhere and uses AVX-512 or AVX2
//! where the CPU has them.

use profilednn_isa::{Isa, Level};

/// True when `line` holds a byte outside printable ASCII (below 0x20 or at/above 0x7f),
/// tab excepted only by the caller's slow path.
#[inline]
pub fn has_unusual_bytes(line: &[u8]) -> bool {
    if line.len() < 64 {
        return unusual_portable(line);
    }
    has_unusual_bytes_with(Isa::detect(), line)
}

/// [`has_unusual_bytes`] on the path of `isa` (tests run every path the CPU has).
pub fn has_unusual_bytes_with(isa: Isa, line: &[u8]) -> bool {
    match isa.level() {
        // SAFETY: an `Isa` of this level exists only when detection found avx512f/bw (and
        // the rest of the level), the features `unusual_avx512` is compiled for.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { unusual_avx512(line) },
        // SAFETY: the AVX2 level was detected (avx2, fma).
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { unusual_avx2(line) },
        _ => unusual_portable(line),
    }
}

#[inline(always)]
fn unusual_generic(line: &[u8]) -> bool {
    // Process in blocks so the compiler emits wide compares and an OR-reduction per block.
    let mut chunks = line.chunks_exact(64);
    for c in &mut chunks {
        let mut acc = 0u8;
        for &b in c {
            acc |= u8::from(b.wrapping_sub(0x20) >= 0x5f);
        }
        if acc != 0 {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b.wrapping_sub(0x20) >= 0x5f)
}

fn unusual_portable(line: &[u8]) -> bool {
    unusual_generic(line)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn unusual_avx2(line: &[u8]) -> bool {
    unusual_generic(line)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn unusual_avx512(line: &[u8]) -> bool {
    unusual_generic(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(line: &[u8]) -> bool {
        line.iter().any(|&b| !(0x20..0x7f).contains(&b))
    }

    #[test]
    fn edges() {
        assert!(!has_unusual_bytes(b"onednn_verbose,exec,cpu ~"));
        assert!(has_unusual_bytes(b"tab\there"));
        assert!(has_unusual_bytes(
            &[b'a'; 100]
                .iter()
                .copied()
                .chain([0x7f])
                .collect::<Vec<_>>()
        ));
        assert!(has_unusual_bytes(&[0xff; 70]));
    }

    proptest! {
        #[test]
        fn every_path_agrees_with_the_naive_check(v in proptest::collection::vec(0x1fu8..0x81, 0..300)) {
            prop_assert_eq!(has_unusual_bytes(&v), naive(&v));
            for isa in Isa::available() {
                prop_assert_eq!(has_unusual_bytes_with(isa, &v), naive(&v), "{:?}", isa);
            }
        }
    }
}
