//! What a CPU can compute, read from the names oneDNN gives its ISAs: the `isa:` header line
//! (`Intel AVX-512 with Intel DL Boost and bfloat16 support`, `Intel AVX10.1 and Intel AMX with
//! bfloat16 and 8-bit integer support`, …) and the ISA suffix of implementation names
//! (`brg_conv_fwd:avx512_core_bf16`, `brg_matmul:avx10_1_512_amx`).
//!
//! Why one table: the rules, the roofline's peak choice and the Python side used to test
//! substrings ("bfloat16", "AMX") each on their own, and oneDNN 3.5 renamed the Xeon levels to
//! `Intel AVX10.1 …`, a header without the word "bfloat16" on a CPU that has AVX512-BF16 and
//! FP16: every string test read that as "no bf16 units". The header is a grammar, not a free
//! text (`cpu_isa_traits.hpp`'s `get_isa_info`, 0.19 → 3.14): a base (`Intel AVX2`, `Intel
//! AVX-512`, `Intel AVX10.1`, …), optional `with` extensions, and an optional `and Intel AMX with
//! … support` part. Every word of it is in [`HEADER_BASES`], [`HEADER_EXTENSIONS`] or
//! [`AMX_TYPES`]; a header with a word outside them is [`IsaUnits::Unknown`] — never guessed —
//! and the caller says "measure it with `profilednn peak`".
//!
//! Having units is not the same as bf16 paying: without AMX, `vdpbf16ps` runs at about half
//! the f32 FMA rate on the Xeons measured (family 6 model 207: 83 against 158 GFLOP/s a core).
//! That decision belongs to the measured rates (`profilednn peak`) and to projections; this
//! table only says which instructions exist.

use serde::Serialize;

/// Compute units of a CPU, as far as oneDNN can use them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Units {
    /// Width of f32 vector arithmetic, bits (128 for SSE, 256 for AVX/AVX2, 512 for AVX-512).
    pub f32_vector_bits: u16,
    /// Fused multiply-add (AVX2 and later; SSE4.1 and AVX multiply and add apart).
    pub fma: bool,
    /// int8 dot products (VNNI: "Intel DL Boost").
    pub int8_vnni: bool,
    /// bf16 dot products into f32 (`vdpbf16ps`: AVX512-BF16, AVX10). Native bf16 compute.
    pub bf16_dot: bool,
    /// bf16/f16 conversions only (AVX2-VNNI-2's NE_CONVERT): bf16 data, f32 arithmetic.
    pub bf16_convert_only: bool,
    /// f16 arithmetic (AVX512-FP16, AVX10).
    pub fp16: bool,
    pub amx_bf16: bool,
    pub amx_int8: bool,
    pub amx_fp16: bool,
    pub amx_fp8: bool,
}

impl Units {
    /// bf16 convolutions and matmuls run on bf16 units (dot products or AMX tiles), not by
    /// converting through f32.
    pub fn native_bf16(&self) -> bool {
        self.bf16_dot || self.amx_bf16
    }

    /// Field by field: the width by `bits`, every unit by `flag` (`|` for the extensions of
    /// one header, `&` for the units several headers all have).
    fn combine(self, o: Units, bits: fn(u16, u16) -> u16, flag: fn(bool, bool) -> bool) -> Units {
        Units {
            f32_vector_bits: bits(self.f32_vector_bits, o.f32_vector_bits),
            fma: flag(self.fma, o.fma),
            int8_vnni: flag(self.int8_vnni, o.int8_vnni),
            bf16_dot: flag(self.bf16_dot, o.bf16_dot),
            bf16_convert_only: flag(self.bf16_convert_only, o.bf16_convert_only),
            fp16: flag(self.fp16, o.fp16),
            amx_bf16: flag(self.amx_bf16, o.amx_bf16),
            amx_int8: flag(self.amx_int8, o.amx_int8),
            amx_fp16: flag(self.amx_fp16, o.amx_fp16),
            amx_fp8: flag(self.amx_fp8, o.amx_fp8),
        }
    }

    /// These units with an extension's.
    fn or(self, o: Units) -> Units {
        self.combine(o, u16::max, |a, b| a | b)
    }

    /// A short human list: `AVX-512 FMA, VNNI, bf16 dot product, fp16, AMX-BF16, AMX-INT8`.
    pub fn describe(&self) -> String {
        let mut v = vec![match (self.f32_vector_bits, self.fma) {
            (512, _) => "512-bit FMA".to_string(),
            (b, true) => format!("{b}-bit FMA"),
            (b, false) => format!("{b}-bit SIMD without FMA"),
        }];
        for (on, name) in [
            (self.int8_vnni, "VNNI"),
            (self.bf16_dot, "bf16 dot product"),
            (self.bf16_convert_only, "bf16/f16 conversion only"),
            (self.fp16, "fp16"),
            (self.amx_bf16, "AMX-BF16"),
            (self.amx_int8, "AMX-INT8"),
            (self.amx_fp16, "AMX-FP16"),
            (self.amx_fp8, "AMX-FP8"),
        ] {
            if on {
                v.push(name.to_string());
            }
        }
        v.join(", ")
    }
}

/// What an ISA name says, or that it is not in the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum IsaUnits {
    Known {
        units: Units,
    },
    /// A name this table does not know (a newer oneDNN, another vendor's build): its units are
    /// not guessed.
    Unknown {
        name: String,
    },
}

impl IsaUnits {
    pub fn units(&self) -> Option<Units> {
        match self {
            IsaUnits::Known { units } => Some(*units),
            IsaUnits::Unknown { .. } => None,
        }
    }

    /// Native bf16 compute: `Some(true/false)` when known, `None` when the name is unknown.
    pub fn native_bf16(&self) -> Option<bool> {
        self.units().map(|u| u.native_bf16())
    }

    /// Several header lines (merged logs of several ranks or machines): the units all of them
    /// have, so a rule about "this CPU" holds on each; unknown if any is unknown.
    pub fn merge(readings: &[IsaUnits]) -> Option<IsaUnits> {
        let mut it = readings.iter();
        let first = it.next()?.clone();
        Some(it.fold(first, |acc, r| match (acc, r) {
            (IsaUnits::Known { units: a }, IsaUnits::Known { units: b }) => IsaUnits::Known {
                units: a.combine(*b, u16::min, |x, y| x & y),
            },
            (u @ IsaUnits::Unknown { .. }, _) => u,
            (_, u) => u.clone(),
        }))
    }
}

const fn u(bits: u16, fma: bool) -> Units {
    Units {
        f32_vector_bits: bits,
        fma,
        int8_vnni: false,
        bf16_dot: false,
        bf16_convert_only: false,
        fp16: false,
        amx_bf16: false,
        amx_int8: false,
        amx_fp16: false,
        amx_fp8: false,
    }
}

/// AVX10 (Granite Rapids' and Emerald Rapids' oneDNN name for the AVX-512 levels from Sapphire
/// Rapids on): AVX-512 with VNNI, BF16 and FP16.
const AVX10: Units = Units {
    int8_vnni: true,
    bf16_dot: true,
    fp16: true,
    ..u(512, true)
};

/// The bases a header starts with, longest first where one is a prefix of another.
pub const HEADER_BASES: &[(&str, Units)] = &[
    ("Intel 64", u(128, false)),
    ("Intel SSE4.1", u(128, false)),
    ("Intel AVX2", u(256, true)),
    ("Intel AVX-512", u(512, true)),
    ("Intel AVX10.1/512", AVX10),
    (
        "Intel AVX10.1/256",
        Units {
            f32_vector_bits: 256,
            ..AVX10
        },
    ),
    ("Intel AVX10.1", AVX10),
    ("Intel AVX 10.1", AVX10),
    ("Intel AVX10.2/512", AVX10),
    ("Intel AVX10.2", AVX10),
    ("Intel AVX 10.2", AVX10),
    ("Intel AVX", u(256, false)),
];

/// What a `with …` extension adds. Keys are the words between commas and "and", without a
/// trailing "extensions" or "support". `bfloat16`/`float16` on an AVX2 base are the
/// NE_CONVERT conversions (AVX2-VNNI-2), on AVX-512 the dot products: see [`header_units`].
pub const HEADER_EXTENSIONS: &[&str] = &[
    "AVX512BW",
    "AVX512VL",
    "AVX512DQ",
    "AVX512CD",
    "AVX512ER",
    "AVX512PF",
    "AVX512_4FMAPS",
    "AVX512_4VNNIW",
    "Intel DL Boost",
    "bfloat16",
    "float16",
];

/// The data types of an `Intel AMX with … support` part.
pub const AMX_TYPES: &[&str] = &["bfloat16", "8-bit integer", "float16", "float8", "fp8"];

/// The words of a list: `a, b and c` → `[a, b, c]`, each without "extensions"/"support".
fn words(list: &str) -> Vec<&str> {
    list.split(", ")
        .flat_map(|p| p.split(" and "))
        .map(|w| {
            let w = w.trim();
            w.strip_prefix("and ")
                .unwrap_or(w)
                .trim_end_matches(" support")
                .trim_end_matches(" extensions")
                .trim()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The units of an `isa:` header line's text (without `isa:`).
pub fn header_units(header: &str) -> IsaUnits {
    let unknown = || IsaUnits::Unknown {
        name: header.to_string(),
    };
    let h = header.trim();
    // The AMX part, in its two spellings.
    let (vector, amx) = match [
        "and Intel Advanced Matrix Extensions (Intel AMX) with ",
        "and Intel AMX with ",
    ]
    .iter()
    .find_map(|sep| h.find(sep).map(|i| (&h[..i], Some(&h[i + sep.len()..]))))
    {
        Some(p) => p,
        None => (h, None),
    };
    let vector = vector.trim();
    let Some((base, mut units)) = HEADER_BASES
        .iter()
        .filter(|(b, _)| vector.starts_with(b))
        .max_by_key(|(b, _)| b.len())
        .map(|(b, u)| (*b, *u))
    else {
        return unknown();
    };
    let rest = vector[base.len()..].trim();
    if let Some(ext) = rest.strip_prefix("with ") {
        for w in words(ext) {
            if !HEADER_EXTENSIONS.contains(&w) {
                return unknown();
            }
            let avx2 = units.f32_vector_bits < 512;
            units = units.or(match w {
                "Intel DL Boost" => Units {
                    int8_vnni: true,
                    ..u(0, false)
                },
                "bfloat16" | "float16" if avx2 => Units {
                    bf16_convert_only: true,
                    ..u(0, false)
                },
                "bfloat16" => Units {
                    bf16_dot: true,
                    ..u(0, false)
                },
                "float16" => Units {
                    fp16: true,
                    ..u(0, false)
                },
                _ => u(0, false),
            });
        }
    } else if !rest.is_empty() {
        return unknown();
    }
    if let Some(amx) = amx {
        for w in words(amx) {
            units = units.or(match w {
                "bfloat16" => Units {
                    amx_bf16: true,
                    ..u(0, false)
                },
                "8-bit integer" => Units {
                    amx_int8: true,
                    ..u(0, false)
                },
                "float16" => Units {
                    amx_fp16: true,
                    ..u(0, false)
                },
                "float8" | "fp8" => Units {
                    amx_fp8: true,
                    ..u(0, false)
                },
                _ => return unknown(),
            });
        }
    }
    IsaUnits::Known { units }
}

const VNNI512: Units = Units {
    int8_vnni: true,
    ..u(512, true)
};
const BF16_512: Units = Units {
    bf16_dot: true,
    ..VNNI512
};
const AMX: Units = Units {
    amx_bf16: true,
    amx_int8: true,
    ..AVX10
};

/// oneDNN's ISA names as implementation suffixes and `ONEDNN_MAX_CPU_ISA` values (lower case),
/// from `cpu_isa_traits.hpp` 0.19 → 3.14. A kernel's suffix is the least the CPU has: a
/// `brg_matmul:avx512_core_bf16` ran on bf16 units; `jit:avx512_core` ran without them, on any
/// CPU.
pub const IMPL_ISAS: &[(&str, Units)] = &[
    ("sse41", u(128, false)),
    ("sse42", u(128, false)),
    ("avx", u(256, false)),
    ("avx2", u(256, true)),
    (
        "avx2_vnni",
        Units {
            int8_vnni: true,
            ..u(256, true)
        },
    ),
    (
        "avx2_vnni_2",
        Units {
            int8_vnni: true,
            bf16_convert_only: true,
            ..u(256, true)
        },
    ),
    ("avx512_common", u(512, true)),
    ("avx512_mic", u(512, true)),
    ("avx512_mic_4ops", u(512, true)),
    ("avx512_core", u(512, true)),
    ("avx512_core_vnni", VNNI512),
    ("avx512_core_bf16", BF16_512),
    (
        "avx512_core_bf16_ymm",
        Units {
            f32_vector_bits: 256,
            ..BF16_512
        },
    ),
    ("avx512_core_fp16", AVX10),
    ("avx10_1_512", AVX10),
    (
        "avx512_core_bf16_amx_bf16",
        Units {
            amx_bf16: true,
            ..BF16_512
        },
    ),
    (
        "avx512_core_bf16_amx_int8",
        Units {
            amx_int8: true,
            ..BF16_512
        },
    ),
    ("avx512_core_amx", AMX),
    ("avx10_1_512_amx", AMX),
    (
        "avx512_core_amx_fp16",
        Units {
            amx_fp16: true,
            ..AMX
        },
    ),
    (
        "avx10_1_512_amx_fp16",
        Units {
            amx_fp16: true,
            ..AMX
        },
    ),
    ("avx10_2_512", AVX10),
    ("avx10_2", AVX10),
    (
        "avx10_2_512_amx_2",
        Units {
            amx_fp16: true,
            amx_fp8: true,
            ..AMX
        },
    ),
    (
        "avx10_2_amx_2",
        Units {
            amx_fp16: true,
            amx_fp8: true,
            ..AMX
        },
    ),
];

/// The ISA an implementation name ran at, from its suffix: `brgconv_bwd_w:avx10_1_512_amx`,
/// `jit_bf16:avx512_core`, `jit:avx512_core_amx_bf16` (an AMX kernel's data type after the
/// ISA), `brg_matmul:avx512_core_bf16`. `None` for names without an ISA token (`ref:any`,
/// `gemm:jit`, AMD's `zen:matmul:f32|bf16:amd`).
pub fn impl_units(implementation: &str) -> Option<(&'static str, Units)> {
    // The longest ISA name that a `:`-separated field starts with, at a `_` or the field's end:
    // an AMX kernel named by data type (`jit:avx512_core_amx_bf16`) is the AMX level itself.
    let mut best: Option<(&'static str, Units)> = None;
    for field in implementation.split([':', '|', ',']) {
        for (name, units) in IMPL_ISAS {
            let fits = field == *name
                || (field.starts_with(name) && field.as_bytes().get(name.len()) == Some(&b'_'));
            if fits && best.is_none_or(|(b, _)| name.len() > b.len()) {
                best = Some((name, *units));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(h: &str) -> Units {
        header_units(h)
            .units()
            .unwrap_or_else(|| panic!("unknown header: {h}"))
    }

    /// Header lines as each CPU class's oneDNN prints them (the fixtures' and oneDNN's own
    /// strings), with the units read by hand from Intel's and AMD's specifications.
    #[test]
    fn every_cpu_class_reads_as_its_specification() {
        // Zen 3 (AVX2 only) and Zen 4 (AVX-512 with VNNI and BF16): oneDNN names AMD by ISA.
        let zen3 = known("Intel AVX2");
        assert_eq!(
            (zen3.f32_vector_bits, zen3.fma, zen3.native_bf16()),
            (256, true, false)
        );
        let zen4 = known("Intel AVX-512 with Intel DL Boost and bfloat16 support");
        assert!(zen4.bf16_dot && zen4.int8_vnni && !zen4.amx_bf16 && !zen4.fp16);
        // Ice Lake / Cascade Lake.
        let icx = known("Intel AVX-512 with Intel DL Boost");
        assert!(icx.int8_vnni && !icx.native_bf16());
        let skx = known("Intel AVX-512 with AVX512BW, AVX512VL, and AVX512DQ extensions");
        assert_eq!((skx.f32_vector_bits, skx.native_bf16()), (512, false));
        // Sapphire Rapids, in oneDNN 2.7-3.4's and 3.5+'s words.
        for h in [
            "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and Intel AMX with bfloat16 and 8-bit integer support",
            "Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support",
            "Intel AVX10.1 and Intel Advanced Matrix Extensions (Intel AMX) with 8-bit integer and bfloat16 support",
        ] {
            let spr = known(h);
            assert!(spr.amx_bf16 && spr.amx_int8 && spr.bf16_dot && spr.fp16 && !spr.amx_fp16, "{h}");
        }
        // A Xeon without AMX exposed (Emerald Rapids guest): AVX10.1 has bf16 dot products.
        for h in ["Intel AVX10.1", "Intel AVX 10.1", "Intel AVX10.1/512"] {
            let emr = known(h);
            assert!(
                emr.bf16_dot && emr.fp16 && emr.native_bf16() && !emr.amx_bf16,
                "{h}"
            );
        }
        // Granite Rapids, and oneDNN main's AVX10.2 with AMX-FP8.
        let gnr =
            known("Intel AVX10.1 and Intel AMX with 8-bit integer, bfloat16 and float16 support");
        assert!(gnr.amx_fp16 && !gnr.amx_fp8);
        let next = known(
            "Intel AVX10.2 and Intel AMX with 8-bit integer, bfloat16, float16, float8 support",
        );
        assert!(next.amx_fp8 && next.amx_fp16 && next.amx_bf16);
        // AVX2-VNNI-2 converts bf16, it has no bf16 dot product.
        let arl = known("Intel AVX2 with Intel DL Boost, float16 and bfloat16 support");
        assert!(arl.bf16_convert_only && !arl.native_bf16());
        assert!(!known("Intel AVX").fma);
    }

    #[test]
    fn unknown_words_are_not_guessed() {
        for h in [
            "Intel AVX10.3",
            "AMD Zen 6",
            "Intel AVX-512 with bfloat16 and quantum support",
            "Intel AVX10.1 and Intel AMX with float4 support",
            "Intel AVX-512 sparkling",
        ] {
            assert!(matches!(header_units(h), IsaUnits::Unknown { .. }), "{h}");
        }
    }

    #[test]
    fn implementation_suffixes() {
        let isa = |i: &str| impl_units(i).map(|(n, _)| n);
        assert_eq!(isa("brg_matmul:avx512_core_bf16"), Some("avx512_core_bf16"));
        assert_eq!(
            isa("brgconv_bwd_w:avx10_1_512_amx"),
            Some("avx10_1_512_amx")
        );
        assert_eq!(isa("jit:avx512_core_amx_bf16"), Some("avx512_core_amx"));
        assert_eq!(isa("jit_bf16:avx512_core"), Some("avx512_core"));
        assert_eq!(
            isa("brg_matmul:avx10_2_512_amx_2"),
            Some("avx10_2_512_amx_2")
        );
        assert_eq!(isa("jit:avx2"), Some("avx2"));
        assert_eq!(isa("zen:matmul:f32|bf16:amd"), None);
        assert_eq!(isa("ref:any"), None);
        assert_eq!(isa("gemm:jit"), None);
        assert!(impl_units("brg_conv_fwd:avx512_core_bf16")
            .unwrap()
            .1
            .native_bf16());
        assert!(!impl_units("jit_bf16:avx512_core").unwrap().1.native_bf16());
    }

    #[test]
    fn merged_readings_keep_what_all_have() {
        let a = header_units("Intel AVX10.1");
        let b = header_units("Intel AVX-512 with Intel DL Boost");
        assert_eq!(
            IsaUnits::merge(&[a.clone(), b]).unwrap().native_bf16(),
            Some(false)
        );
        let c = header_units("Intel AVX10.9");
        assert_eq!(IsaUnits::merge(&[a, c]).unwrap().native_bf16(), None);
    }
}
