//! Compute-peak kernels: independent chains of FMA (or bf16 dot-product) instructions, enough
//! of them to cover the instruction latency on every port, so the loop runs at throughput.

use std::time::Instant;

/// One compute kernel.
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    pub precision: &'static str,
    pub isa: &'static str,
    pub instruction: &'static str,
    /// f32 lanes of the accumulator.
    pub lanes: u32,
    /// Floating-point operations per instruction (FMA = 2 per lane; `vdpbf16ps` = 4; an AMX
    /// tile product 16 × 16 × K × 2). Integer kernels count operations the same way.
    pub flops_per_instruction: u32,
    /// Instructions per loop iteration (independent accumulator chains, or tile products).
    pub chains: u32,
    /// Cycles between two instructions on one unit at full throughput: 1 for the vector units,
    /// 16 for an AMX tile product (16 rows).
    pub cycles_per_instruction: u32,
    /// Units per core that can run the instruction (2 FMA ports on server cores; 1 TMUL).
    pub units: u32,
    /// Compiled for the features `available` checks: only `run` calls it, after that check.
    body: unsafe fn(u64) -> f32,
    available: fn() -> bool,
}

impl Kernel {
    pub fn available(&self) -> bool {
        (self.available)()
    }

    /// `flops per instruction × units / cycles per instruction × GHz`: the arithmetic of the
    /// peak formula, kept apart from any timing so it can be checked on its own.
    pub fn theoretical_per_core(&self, ghz: f64, units: u32) -> f64 {
        self.flops_per_instruction as f64 * units as f64 / self.cycles_per_instruction as f64 * ghz
    }

    /// The plausible per-core range at nominal frequency `ghz`: from a quarter of one unit at
    /// that frequency (a throttled or shared core) to all the core's units at 1.8× (turbo). A
    /// measurement outside it means the kernel or the timing is wrong, not the machine.
    pub fn envelope(&self, ghz: f64) -> (f64, f64) {
        (
            0.25 * self.theoretical_per_core(ghz, 1),
            1.8 * self.theoretical_per_core(ghz, self.units),
        )
    }

    /// Flops of one call of the body with `iters` iterations.
    pub fn flops(&self, iters: u64) -> u64 {
        iters * self.chains as u64 * self.flops_per_instruction as u64
    }
}

/// Best-of-`runs` GFLOP/s over `threads` threads each running the kernel.
///
/// Panics if the CPU lacks the kernel's instructions (check [`Kernel::available`] first).
pub fn run(k: &Kernel, iters: u64, runs: u32, threads: usize) -> f64 {
    assert!(
        k.available(),
        "the {} kernel needs instructions this CPU lacks",
        k.isa
    );
    let mut best = 0.0f64;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let sink: f32 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        // SAFETY: `available()` was checked above: the CPU has the features
                        // the body is compiled for.
                        unsafe { (k.body)(iters) }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        let secs = start.elapsed().as_secs_f64();
        std::hint::black_box(sink);
        best = best.max(k.flops(iters) as f64 * threads as f64 / secs / 1e9);
    }
    best
}

pub fn kernels() -> Vec<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        vec![
            Kernel {
                precision: "f32",
                isa: "sse",
                instruction: "vfmadd231ps xmm",
                lanes: 4,
                flops_per_instruction: 8,
                chains: 12,
                cycles_per_instruction: 1,
                units: 2,
                body: x86::fma128,
                available: || profilednn_isa::Isa::of(profilednn_isa::Level::Avx2).is_some(),
            },
            Kernel {
                precision: "f32",
                isa: "avx2",
                instruction: "vfmadd231ps ymm",
                lanes: 8,
                flops_per_instruction: 16,
                chains: 12,
                cycles_per_instruction: 1,
                units: 2,
                body: x86::fma256,
                available: || profilednn_isa::Isa::of(profilednn_isa::Level::Avx2).is_some(),
            },
            Kernel {
                precision: "f32",
                isa: "avx512",
                instruction: "vfmadd231ps zmm",
                lanes: 16,
                flops_per_instruction: 32,
                chains: 16,
                cycles_per_instruction: 1,
                units: 2,
                body: x86::fma512,
                available: || profilednn_isa::Isa::of(profilednn_isa::Level::Avx512).is_some(),
            },
            Kernel {
                precision: "bf16",
                isa: "avx512_bf16",
                instruction: "vdpbf16ps zmm",
                lanes: 16,
                flops_per_instruction: 64,
                chains: 16,
                cycles_per_instruction: 1,
                units: 2,
                body: x86::dpbf16,
                available: profilednn_isa::avx512_bf16,
            },
            Kernel {
                precision: "f16",
                isa: "avx512_fp16",
                instruction: "vfmadd231ph zmm",
                lanes: 32,
                flops_per_instruction: 64,
                chains: 16,
                cycles_per_instruction: 1,
                units: 2,
                body: x86::fma_ph,
                available: profilednn_isa::avx512_fp16,
            },
            Kernel {
                precision: "int8",
                isa: "avx512_vnni",
                instruction: "vpdpbusd zmm",
                lanes: 16,
                // 16 lanes x 4 u8*s8 products, each a multiply and an add.
                flops_per_instruction: 128,
                chains: 16,
                cycles_per_instruction: 1,
                units: 2,
                body: x86::dpbusd,
                available: profilednn_isa::avx512_vnni,
            },
            amx_kernel("bf16", "tdpbf16ps", 32, super::amx::bf16, || {
                super::amx::usable(profilednn_isa::amx_bf16())
            }),
            amx_kernel("int8", "tdpbssd", 64, super::amx::int8, || {
                super::amx::usable(profilednn_isa::amx_int8())
            }),
            amx_kernel("f16", "tdpfp16ps", 32, super::amx::fp16, || {
                super::amx::usable(profilednn_isa::amx_fp16())
            }),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        vec![Kernel {
            precision: "f32",
            isa: "scalar",
            instruction: "mul_add f32",
            lanes: 1,
            flops_per_instruction: 2,
            chains: 8,
            cycles_per_instruction: 1,
            units: 2,
            body: portable,
            available: || true,
        }]
    }
}

/// An AMX tile-product kernel: `k` products per output element (bf16/f16 pairs or int8
/// quadruples in a 64-byte row), one instruction per 16 cycles on the core's one TMUL.
#[cfg(target_arch = "x86_64")]
fn amx_kernel(
    precision: &'static str,
    instruction: &'static str,
    k: u32,
    body: unsafe fn(u64) -> f32,
    available: fn() -> bool,
) -> Kernel {
    Kernel {
        precision,
        isa: "amx",
        instruction,
        lanes: 16 * 16,
        flops_per_instruction: 16 * 16 * k * 2,
        chains: super::amx::PRODUCTS_PER_ITERATION,
        cycles_per_instruction: 16,
        units: 1,
        body,
        available,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn portable(iters: u64) -> f32 {
    let mut acc = [0.0f32; 8];
    for _ in 0..iters {
        for a in acc.iter_mut() {
            *a = a.mul_add(0.999_999_9, 1e-7);
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Generates a kernel: `$n` accumulators, each `acc = acc * a + b` (converges, never
    /// overflows), summed at the end so the compiler must keep every chain.
    macro_rules! fma_kernel {
        ($safe:ident, $inner:ident, $feat:literal, $n:literal, $set1:ident, $fma:ident, $ty:ty, $store:expr) => {
            /// # Safety
            /// The CPU must have the features of the `target_feature` list below.
            pub unsafe fn $safe(iters: u64) -> f32 {
                // SAFETY: the caller guarantees the features.
                unsafe { $inner(iters) }
            }
            #[target_feature(enable = $feat)]
            unsafe fn $inner(iters: u64) -> f32 {
                let a = $set1(0.999_999_9);
                let b = $set1(1e-7);
                let mut acc: [$ty; $n] = [$set1(0.0); $n];
                for _ in 0..iters {
                    for x in acc.iter_mut() {
                        *x = $fma(*x, a, b);
                    }
                }
                let mut total = 0.0f32;
                for x in acc {
                    total += $store(x);
                }
                total
            }
        };
    }

    #[target_feature(enable = "sse2")]
    unsafe fn first128(x: __m128) -> f32 {
        _mm_cvtss_f32(x)
    }
    #[target_feature(enable = "avx")]
    unsafe fn first256(x: __m256) -> f32 {
        _mm256_cvtss_f32(x)
    }
    #[target_feature(enable = "avx512f")]
    unsafe fn first512(x: __m512) -> f32 {
        _mm512_cvtss_f32(x)
    }

    fma_kernel!(
        fma128,
        fma128_impl,
        "fma",
        12,
        _mm_set1_ps,
        _mm_fmadd_ps,
        __m128,
        |x| first128(x)
    );
    fma_kernel!(
        fma256,
        fma256_impl,
        "fma,avx2",
        12,
        _mm256_set1_ps,
        _mm256_fmadd_ps,
        __m256,
        |x| first256(x)
    );
    fma_kernel!(
        fma512,
        fma512_impl,
        "avx512f",
        16,
        _mm512_set1_ps,
        _mm512_fmadd_ps,
        __m512,
        |x| first512(x)
    );

    /// Generates a vector kernel in assembly (instructions stable Rust has no intrinsics
    /// for): 16 accumulators zmm0..zmm15, each `$ins zmmI, zmm30, zmm31`, from zeroed sources.
    macro_rules! asm_kernel {
        ($name:ident, $ins:literal) => {
            /// # Safety
            /// The CPU must have the instruction's extension (see the kernel's `available`).
            pub unsafe fn $name(iters: u64) -> f32 {
                // SAFETY: the caller guarantees the extension; the block touches registers
                // only (all declared clobbered) and no memory.
                unsafe {
                    std::arch::asm!(
                        "vpxord zmm30, zmm30, zmm30",
                        "vpxord zmm31, zmm31, zmm31",
                        "2:",
                        concat!($ins, " zmm0, zmm30, zmm31"),
                        concat!($ins, " zmm1, zmm30, zmm31"),
                        concat!($ins, " zmm2, zmm30, zmm31"),
                        concat!($ins, " zmm3, zmm30, zmm31"),
                        concat!($ins, " zmm4, zmm30, zmm31"),
                        concat!($ins, " zmm5, zmm30, zmm31"),
                        concat!($ins, " zmm6, zmm30, zmm31"),
                        concat!($ins, " zmm7, zmm30, zmm31"),
                        concat!($ins, " zmm8, zmm30, zmm31"),
                        concat!($ins, " zmm9, zmm30, zmm31"),
                        concat!($ins, " zmm10, zmm30, zmm31"),
                        concat!($ins, " zmm11, zmm30, zmm31"),
                        concat!($ins, " zmm12, zmm30, zmm31"),
                        concat!($ins, " zmm13, zmm30, zmm31"),
                        concat!($ins, " zmm14, zmm30, zmm31"),
                        concat!($ins, " zmm15, zmm30, zmm31"),
                        "dec {n}",
                        "jnz 2b",
                        n = inout(reg) iters.max(1) => _,
                        out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
                        out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
                        out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _,
                        out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
                        out("zmm30") _, out("zmm31") _,
                        options(nostack, nomem),
                    );
                }
                0.0
            }
        };
    }

    asm_kernel!(fma_ph, "vfmadd231ph");
    asm_kernel!(dpbusd, "vpdpbusd");

    /// # Safety
    /// The CPU must have avx512f and avx512bf16.
    pub unsafe fn dpbf16(iters: u64) -> f32 {
        // SAFETY: the caller guarantees the features.
        unsafe { dpbf16_impl(iters) }
    }

    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn dpbf16_impl(iters: u64) -> f32 {
        let a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5), _mm512_set1_ps(0.25));
        let b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3), _mm512_set1_ps(-1e-3));
        let mut acc = [_mm512_set1_ps(0.0); 16];
        for _ in 0..iters {
            for x in acc.iter_mut() {
                *x = _mm512_dpbf16_ps(*x, a, b);
            }
        }
        let mut total = 0.0f32;
        for x in acc {
            total += _mm512_cvtss_f32(x);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wide bounds (a factor of ~30): this checks that the kernel computes what it claims,
    /// it is not a speed target. Timing-based, so an accuracy check: `bench/accuracy.sh` runs
    /// it (`--ignored`) on a quiet machine and prints every figure.
    #[test]
    #[ignore = "accuracy check, run by bench/accuracy.sh"]
    fn measured_peaks_fall_in_the_plausible_envelope() {
        let Some(ghz) = crate::cpu::frequency_ghz() else {
            println!("SKIPPED: the CPU frequency is unknown (no cpufreq, no `cpu MHz`)");
            return;
        };
        for k in kernels().into_iter().filter(|k| k.available()) {
            let measured = run(&k, 2_000_000, 3, 1);
            let (lo, hi) = k.envelope(ghz);
            println!(
                "peak envelope: {} {} one core {measured:.1} GFLOP/s, plausible [{lo:.1}, {hi:.1}] at {ghz:.2} GHz",
                k.precision, k.isa
            );
            assert!(
                (lo..=hi).contains(&measured),
                "{} {}: {measured:.1} GFLOP/s outside [{lo:.1}, {hi:.1}] at {ghz} GHz",
                k.precision,
                k.isa
            );
        }
    }

    #[test]
    fn peak_formula_arithmetic() {
        // AVX-512 f32 FMA: 16 lanes x 2 flops x 2 units x 2.5 GHz = 160 GFLOP/s per core.
        let k = kernels().into_iter().find(|k| k.isa == "avx512");
        if let Some(k) = k {
            assert_eq!(k.theoretical_per_core(2.5, 2), 160.0);
            assert_eq!(k.flops(10), 10 * 16 * 32);
            assert_eq!(k.envelope(2.0), (16.0, 230.4));
        }
        let bf = kernels().into_iter().find(|k| k.precision == "bf16");
        if let Some(k) = bf {
            // vdpbf16ps: 16 lanes x (2 multiplies + 2 adds).
            assert_eq!(k.theoretical_per_core(2.0, 2), 256.0);
        }
    }
}
