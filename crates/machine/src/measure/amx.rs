//! AMX tile peaks: `tdpbf16ps`, `tdpbssd` and `tdpfp16ps` loops in inline assembly.
//!
//! Why assembly: stable Rust has no AMX intrinsics, but its assembler knows the instructions.
//! Each body configures eight 16 × 64-byte tiles, loads the two A and two B tiles once, and
//! runs a 2 × 2 block of tile products on four accumulators: four independent chains, enough
//! to cover the TMUL's latency, with no memory traffic in the loop, so the loop runs at the
//! unit's throughput (one 16-row tile product per 16 cycles on Sapphire Rapids).
//!
//! Linux hands the tile state to a process only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)`, kernel 5.16 on): without it the first tile instruction faults. The
//! request is made once per process; a refusal (an old kernel, a seccomp filter) is reported by
//! [`permission`] and the AMX kernels are then unavailable, never run.

use std::sync::OnceLock;

/// `Ok` when the OS grants the AMX tile state to this process, else why not.
pub fn permission() -> Result<(), String> {
    static GRANTED: OnceLock<Result<(), String>> = OnceLock::new();
    GRANTED.get_or_init(request).clone()
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn request() -> Result<(), String> {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with these two integer arguments reads and writes no user memory; it
    // only asks the kernel to enable the AMX tile state for this process.
    let r = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(format!(
            "the kernel refused the AMX tile state (arch_prctl(ARCH_REQ_XCOMP_PERM): {}); \
             Linux 5.16 or later grants it, and a container's seccomp profile may block it",
            std::io::Error::last_os_error()
        ))
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn request() -> Result<(), String> {
    Err("AMX tile state is requested only on Linux x86-64".into())
}

/// Whether the CPU reports AMX with `unit` and the OS grants the tiles.
pub fn usable(reported: bool) -> bool {
    reported && permission().is_ok()
}

/// The palette-1 tile configuration: every tile 16 rows of 64 bytes (the largest), so one
/// `tdpbf16ps` is 16 × 16 × 32 multiply-adds.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

#[cfg(target_arch = "x86_64")]
impl TileConfig {
    fn full() -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1; // palette 1
        for t in 0..8 {
            c[16 + 2 * t] = 64; // bytes per row (u16, little-endian)
            c[48 + t] = 16; // rows
        }
        TileConfig(c)
    }
}

/// Generates one AMX body: eight tile products per loop iteration on four accumulators.
#[cfg(target_arch = "x86_64")]
macro_rules! amx_body {
    ($name:ident, $ins:literal) => {
        /// # Safety
        /// The CPU must report the instruction's AMX unit and the OS must have granted the tile
        /// state ([`permission`]).
        pub unsafe fn $name(iters: u64) -> f32 {
            let cfg = TileConfig::full();
            // Zeros: no denormals, no NaNs, and the products need no particular values.
            let data = vec![0u8; 16 * 64];
            // SAFETY: the caller guarantees the unit and the permission. The tiles are loaded
            // from `data` (16 rows of 64 bytes, stride 64: inside the buffer), nothing is
            // stored, and `tilerelease` returns the tile state before the block ends.
            unsafe {
                std::arch::asm!(
                    "ldtilecfg [{cfg}]",
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "tileloadd tmm4, [{a} + {s}*1]",
                    "tileloadd tmm5, [{a} + {s}*1]",
                    "tileloadd tmm6, [{a} + {s}*1]",
                    "tileloadd tmm7, [{a} + {s}*1]",
                    "2:",
                    concat!($ins, " tmm0, tmm4, tmm6"),
                    concat!($ins, " tmm1, tmm4, tmm7"),
                    concat!($ins, " tmm2, tmm5, tmm6"),
                    concat!($ins, " tmm3, tmm5, tmm7"),
                    concat!($ins, " tmm0, tmm4, tmm6"),
                    concat!($ins, " tmm1, tmm4, tmm7"),
                    concat!($ins, " tmm2, tmm5, tmm6"),
                    concat!($ins, " tmm3, tmm5, tmm7"),
                    "dec {n}",
                    "jnz 2b",
                    "tilerelease",
                    cfg = in(reg) cfg.0.as_ptr(),
                    a = in(reg) data.as_ptr(),
                    s = in(reg) 64usize,
                    n = inout(reg) iters.max(1) => _,
                    out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                    out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                    options(nostack, readonly),
                );
            }
            std::hint::black_box(data.len()) as f32 * 0.0
        }
    };
}

#[cfg(target_arch = "x86_64")]
amx_body!(bf16, "tdpbf16ps");
#[cfg(target_arch = "x86_64")]
amx_body!(int8, "tdpbssd");
#[cfg(target_arch = "x86_64")]
amx_body!(fp16, "tdpfp16ps");

/// Tile products per loop iteration of every body above.
pub const PRODUCTS_PER_ITERATION: u32 = 8;

#[cfg(test)]
mod tests {
    #[test]
    fn tile_products_count_as_the_unit_defines_them() {
        // 16 rows x 16 f32 columns of C, each a sum over 32 bf16 pairs (64 bytes / 2):
        // 16 * 16 * 32 multiply-adds = 16,384 flops per tdpbf16ps; tdpbssd sums 64 int8 pairs.
        let bf16 = super::super::flops::kernels()
            .into_iter()
            .find(|k| k.isa == "amx" && k.precision == "bf16");
        let Some(k) = bf16 else {
            println!("SKIPPED: no AMX kernels on this architecture");
            return;
        };
        assert_eq!(k.flops_per_instruction, 16 * 16 * 32 * 2);
        assert_eq!(k.chains, super::PRODUCTS_PER_ITERATION);
        // One product per 16 cycles on one TMUL: 1,024 flops a cycle, 2,048 GFLOP/s at 2 GHz.
        assert_eq!(k.theoretical_per_core(2.0, 1), 2048.0);
        let int8 = super::super::flops::kernels()
            .into_iter()
            .find(|k| k.isa == "amx" && k.precision == "int8")
            .unwrap();
        assert_eq!(int8.flops_per_instruction, 16 * 16 * 64 * 2);
    }

    #[test]
    fn the_tile_state_is_granted_where_the_cpu_reports_amx() {
        if !profilednn_isa::amx_bf16() {
            println!("SKIPPED: this CPU does not report AMX-BF16");
            return;
        }
        match super::permission() {
            Ok(()) => {
                // Granted: one short run must complete (a fault would kill the test).
                // SAFETY: AMX-BF16 reported and the tile state granted, just checked.
                let r = unsafe { super::bf16(1000) };
                assert_eq!(r, 0.0);
            }
            Err(why) => println!("SKIPPED: {why}"),
        }
    }
}
