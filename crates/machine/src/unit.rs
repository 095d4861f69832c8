//! Which arithmetic unit a oneDNN implementation ran on, read from its name.
//!
//! Why: one precision has several ceilings on one CPU. On a Xeon with AMX, a bf16 convolution
//! named `brg_conv_fwd:avx512_core_amx` runs on the tiles (about 10× the dot-product rate),
//! while `jit:avx512_core_bf16` runs on `vdpbf16ps`. Setting both against one "bf16 peak" put
//! 173 AMX primitives of a DenseNet log above 100 % of the roof (up to 1,088 %). The unit names
//! here are the `isa` names of the profile's compute measurements ([`crate::ComputePeak`]).
//!
//! Not read from the name: an f32 primitive that runs on `…_amx` under a bf16 fpmath mode is
//! costed in bf16 by the cost model (its precision is the fpmath mode's), so it meets the AMX
//! arm; one whose mode the log does not show is set against the FMA roof.

/// The unit an implementation of `precision` (`f32`, `bf16`, `f16`, `int8`) ran on, and the
/// precision that unit computes in: `("amx", "bf16")` for `brg_matmul:avx10_1_512_amx` in bf16,
/// `("avx512", "f32")` for bf16 on plain `avx512_core` (oneDNN converts to f32 there). `None`
/// for names that say nothing about the unit (`ref:any`, `gemm:jit`, `brgemm:any`), where the
/// precision's best peak stands.
pub fn of_implementation(
    implementation: &str,
    precision: &str,
) -> Option<(&'static str, &'static str)> {
    let name = implementation.to_ascii_lowercase();
    let has = |s: &str| name.contains(s);
    // oneDNN 3.5+ names the AVX-512 Xeon levels avx10_1_512 (AVX10.1 has the bf16, fp16 and
    // VNNI instructions); older names spell each extension.
    let avx10 = has("avx10");
    let avx512 = avx10 || has("avx512");
    match precision {
        "bf16" | "f16" | "int8" if has("amx") => Some(("amx", static_precision(precision))),
        // avx512_core_fp16 (Sapphire Rapids without AMX) has the bf16 dot product too.
        "bf16" if avx10 || has("avx512_core_bf16") || has("avx512_core_fp16") => {
            Some(("avx512_bf16", "bf16"))
        }
        "f16" if avx10 || has("avx512_core_fp16") => Some(("avx512_fp16", "f16")),
        "int8" if avx10 || (has("vnni") && avx512) || has("avx512_core_bf16") => {
            Some(("avx512_vnni", "int8"))
        }
        // bf16/f16 without their units: converted to f32 and computed by FMA.
        "f32" | "bf16" | "f16" if avx512 => Some(("avx512", "f32")),
        "f32" | "bf16" | "f16" if has("avx2") => Some(("avx2", "f32")),
        "f32" if has("sse41") || has("sse4") => Some(("sse", "f32")),
        _ => None,
    }
}

fn static_precision(p: &str) -> &'static str {
    match p {
        "bf16" => "bf16",
        "f16" => "f16",
        "int8" => "int8",
        _ => "f32",
    }
}

#[cfg(test)]
mod tests {
    use super::of_implementation as of;

    #[test]
    fn names_of_every_generation_map_to_their_unit() {
        // Names as real logs print them (../shared/corpus, the fixtures).
        assert_eq!(
            of("brg_conv_fwd:avx512_core_amx", "bf16"),
            Some(("amx", "bf16"))
        );
        assert_eq!(
            of("brg_matmul:avx10_1_512_amx", "bf16"),
            Some(("amx", "bf16"))
        );
        assert_eq!(
            of("brgconv_bwd_d:avx512_core_amx", "int8"),
            Some(("amx", "int8"))
        );
        assert_eq!(
            of("jit:avx512_core_bf16", "bf16"),
            Some(("avx512_bf16", "bf16"))
        );
        assert_eq!(
            of("brg_conv_fwd:avx10_1_512", "bf16"),
            Some(("avx512_bf16", "bf16"))
        );
        assert_eq!(
            of("brg_conv_fwd:avx512_core_fp16", "f16"),
            Some(("avx512_fp16", "f16"))
        );
        assert_eq!(
            of("jit_int8:avx512_core_vnni", "int8"),
            Some(("avx512_vnni", "int8"))
        );
        // bf16 on an AVX-512 core without bf16 units: f32 FMA after conversion.
        assert_eq!(of("jit_bf16:avx512_core", "bf16"), Some(("avx512", "f32")));
        assert_eq!(
            of("brg_conv_fwd:avx512_core", "f32"),
            Some(("avx512", "f32"))
        );
        // An f32 primitive on an AMX machine still runs on FMA units.
        assert_eq!(
            of("brg_conv_fwd:avx512_core_amx", "f32"),
            Some(("avx512", "f32"))
        );
        assert_eq!(of("jit:avx2", "f32"), Some(("avx2", "f32")));
        assert_eq!(of("brg_matmul:avx2_vnni_2", "bf16"), Some(("avx2", "f32")));
        assert_eq!(of("jit:sse41", "f32"), Some(("sse", "f32")));
        for vague in ["ref:any", "gemm:jit", "brgemm:any", "simple:any"] {
            assert_eq!(of(vague, "f32"), None, "{vague}");
        }
    }
}
