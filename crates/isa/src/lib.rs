//! Runtime choice of the SIMD instruction set, made sound by construction.
//!
//! Every SIMD path of ProfileDNN — the kernels, the machine measurements, the parser's byte
//! scan — is compiled for a set of CPU features with `#[target_feature]` and is undefined
//! behaviour on a CPU without them. An [`Isa`] is the *proof* that the CPU has its level: its
//! field is private, so safe code can only get one from detection ([`Isa::detect`],
//! [`Isa::best`], [`Isa::available`], [`Isa::of`]), which checks every feature the level is
//! compiled for; [`Isa::new_unchecked`] is the `unsafe` way around it. A function that takes an
//! `Isa` may therefore call the path it selects without checking again.
//!
//! ```
//! use profilednn_isa::{Isa, Level};
//! let isa = Isa::detect();
//! // The portable level exists on every CPU; the others only where detected.
//! assert!(Isa::available().contains(&Isa::PORTABLE));
//! assert!(Isa::of(isa.level()).is_some());
//! # let _ = Level::Avx512;
//! ```
#![forbid(unsafe_op_in_unsafe_fn)]

use std::sync::OnceLock;

/// The SIMD levels ProfileDNN compiles its paths for, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Plain Rust: any CPU.
    Portable,
    /// `avx2` + `fma`.
    Avx2,
    /// `avx512f`, `avx512bw`, `avx512vl`, `avx512dq` (and `avx2` + `fma`).
    Avx512,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The `target_feature` list paths of this level are compiled with (documentation and
    /// what [`Level::detected`] checks).
    pub fn features(self) -> &'static [&'static str] {
        match self {
            Level::Portable => &[],
            Level::Avx2 => &["avx2", "fma"],
            Level::Avx512 => &["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"],
        }
    }

    /// Whether this CPU has every feature of the level.
    pub fn detected(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Level::Portable => true,
                Level::Avx2 => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
                Level::Avx512 => {
                    Level::Avx2.detected()
                        && std::arch::is_x86_feature_detected!("avx512f")
                        && std::arch::is_x86_feature_detected!("avx512bw")
                        && std::arch::is_x86_feature_detected!("avx512vl")
                        && std::arch::is_x86_feature_detected!("avx512dq")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Level::Portable
        }
    }

    fn parse(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == s.trim())
    }
}

/// A SIMD level this CPU has (see the crate docs: only detection or `unsafe` makes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Isa(Level);

/// The environment variable that caps [`Isa::detect`] at a lower level, for testing every
/// path on one machine: `PROFILEDNN_ISA=avx2|portable` (a level the CPU lacks is never chosen).
pub const OVERRIDE_VAR: &str = "PROFILEDNN_ISA";

impl Isa {
    /// Plain Rust, valid on every CPU.
    pub const PORTABLE: Isa = Isa(Level::Portable);

    /// The best level the CPU has, capped by `PROFILEDNN_ISA` when it is set (read once per
    /// process). An unknown value is ignored with a warning on stderr.
    pub fn detect() -> Isa {
        static CHOSEN: OnceLock<Isa> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let best = Isa::best();
            match std::env::var(OVERRIDE_VAR) {
                Ok(v) => match Level::parse(&v) {
                    Some(cap) => Isa(best.0.min(cap)),
                    None => {
                        eprintln!(
                            "profilednn: ignoring {OVERRIDE_VAR}={v}: expected avx512, avx2 or portable"
                        );
                        best
                    }
                },
                Err(_) => best,
            }
        })
    }

    /// The best level the CPU has, whatever `PROFILEDNN_ISA` says (for measuring the machine).
    pub fn best() -> Isa {
        static BEST: OnceLock<Isa> = OnceLock::new();
        *BEST.get_or_init(|| {
            let level = Level::ALL
                .into_iter()
                .rev()
                .find(|l| l.detected())
                .unwrap_or(Level::Portable);
            Isa(level)
        })
    }

    /// `level`, if the CPU has it.
    pub fn of(level: Level) -> Option<Isa> {
        (level <= Isa::best().0).then_some(Isa(level))
    }

    /// Every level the CPU has, lowest first: tests run each path through this.
    pub fn available() -> Vec<Isa> {
        Level::ALL.into_iter().filter_map(Isa::of).collect()
    }

    /// An `Isa` without detection.
    ///
    /// # Safety
    /// The CPU must have every feature of `level` ([`Level::features`]).
    pub unsafe fn new_unchecked(level: Level) -> Isa {
        Isa(level)
    }

    pub fn level(self) -> Level {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name()
    }
}

/// Whether the CPU has bf16 arithmetic units (AVX512-BF16 or AMX-BF16), i.e. whether oneDNN
/// runs bf16 natively rather than by converting to f32.
pub fn bf16_units() -> bool {
    avx512_bf16() || amx_bf16()
}

/// AVX512-BF16 (`vdpbf16ps`), on top of the AVX-512 level.
pub fn avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        Isa::of(Level::Avx512).is_some() && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether the CPU is AMD's (CPUID leaf 0 vendor "AuthenticAMD"). Kernels use it only where
/// the two vendors' cores were measured to want different code for the same instructions
/// (software prefetch in the optimizer loops), never to decide what an instruction may do.
pub fn amd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let r = std::arch::x86_64::__cpuid(0);
        // The vendor string is EBX, EDX, ECX: "Auth" "enti" "cAMD".
        [r.ebx, r.edx, r.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163]
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// CPUID leaf 7: EDX bit 24 = AMX-TILE, bit 22 = AMX-BF16 (Rust's feature-detection macro does
/// not know AMX on stable). Reported by the CPU; the OS must still grant the tile state.
pub fn amx_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let max = std::arch::x86_64::__cpuid(0).eax;
        if max < 7 {
            return false;
        }
        let r = std::arch::x86_64::__cpuid_count(7, 0);
        r.edx & (1 << 24) != 0 && r.edx & (1 << 22) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// CPUID leaf 7 sub-leaf 0, `(ebx, ecx, edx)`; `None` on a CPU without leaf 7.
#[cfg(target_arch = "x86_64")]
fn leaf7() -> Option<(u32, u32, u32)> {
    if std::arch::x86_64::__cpuid(0).eax < 7 {
        return None;
    }
    let r = std::arch::x86_64::__cpuid_count(7, 0);
    Some((r.ebx, r.ecx, r.edx))
}

/// CPUID leaf 7: EDX bit 24 = AMX-TILE, bit 25 = AMX-INT8 (`tdpbssd`).
pub fn amx_int8() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        leaf7().is_some_and(|(_, _, edx)| edx & (1 << 24) != 0 && edx & (1 << 25) != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// CPUID leaf 7 sub-leaf 1: EAX bit 21 = AMX-FP16 (`tdpfp16ps`, Granite Rapids on), with
/// AMX-TILE.
pub fn amx_fp16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let Some((_, _, edx)) = leaf7() else {
            return false;
        };
        let sub1 = std::arch::x86_64::__cpuid_count(7, 1);
        edx & (1 << 24) != 0 && sub1.eax & (1 << 21) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// AVX512-FP16 (`vfmadd231ph` on zmm), on top of the AVX-512 level: CPUID leaf 7 EDX bit 23.
pub fn avx512_fp16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        Isa::of(Level::Avx512).is_some() && leaf7().is_some_and(|(_, _, edx)| edx & (1 << 23) != 0)
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// AVX512-VNNI (`vpdpbusd` on zmm), on top of the AVX-512 level.
pub fn avx512_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        Isa::of(Level::Avx512).is_some() && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_available_level_is_detected_and_ordered() {
        let v = Isa::available();
        assert_eq!(v[0], Isa::PORTABLE);
        for w in v.windows(2) {
            assert!(w[0].level() < w[1].level());
        }
        for isa in &v {
            assert!(isa.level().detected(), "{isa:?}");
        }
        assert_eq!(*v.last().unwrap(), Isa::best());
        // A level above the best one is never handed out.
        for l in Level::ALL {
            assert_eq!(Isa::of(l).is_some(), l <= Isa::best().level());
        }
        assert!(Isa::detect() <= Isa::best());
    }

    #[test]
    fn avx512_level_checks_every_feature_it_is_compiled_for() {
        #[cfg(target_arch = "x86_64")]
        {
            let all = ["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"];
            let cpu_has = |f: &str| match f {
                "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
                "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
                "avx512vl" => std::arch::is_x86_feature_detected!("avx512vl"),
                "avx512dq" => std::arch::is_x86_feature_detected!("avx512dq"),
                "avx2" => std::arch::is_x86_feature_detected!("avx2"),
                "fma" => std::arch::is_x86_feature_detected!("fma"),
                _ => unreachable!(),
            };
            assert_eq!(Level::Avx512.features(), all);
            assert_eq!(Level::Avx512.detected(), all.iter().all(|f| cpu_has(f)));
        }
    }

    #[test]
    fn vendor_matches_proc_cpuinfo() {
        // /proc/cpuinfo's vendor_id is the same CPUID string, read by the kernel.
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            println!("SKIPPED: no /proc/cpuinfo to compare the vendor with");
            return;
        };
        let Some(line) = info.lines().find(|l| l.starts_with("vendor_id")) else {
            println!("SKIPPED: /proc/cpuinfo names no vendor_id (not x86)");
            return;
        };
        assert_eq!(amd(), line.trim_end().ends_with("AuthenticAMD"), "{line}");
    }

    #[test]
    fn matrix_and_dot_product_units_match_proc_cpuinfo() {
        // The kernel reads the same CPUID bits into /proc/cpuinfo's flags.
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
            println!("SKIPPED: no /proc/cpuinfo to compare the CPUID bits with");
            return;
        };
        let Some(flags) = info.lines().find(|l| l.starts_with("flags")) else {
            println!("SKIPPED: /proc/cpuinfo has no flags line (not x86)");
            return;
        };
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        assert_eq!(amx_bf16(), has("amx_bf16") && has("amx_tile"), "{flags}");
        assert_eq!(amx_int8(), has("amx_int8") && has("amx_tile"), "{flags}");
        assert_eq!(amx_fp16(), has("amx_fp16") && has("amx_tile"), "{flags}");
        let avx512 = Isa::of(Level::Avx512).is_some();
        assert_eq!(avx512_fp16(), avx512 && has("avx512_fp16"), "{flags}");
        assert_eq!(avx512_vnni(), avx512 && has("avx512_vnni"), "{flags}");
    }

    #[test]
    fn level_names_round_trip() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.name()), Some(l));
        }
        assert_eq!(Level::parse("avx9"), None);
    }
}
