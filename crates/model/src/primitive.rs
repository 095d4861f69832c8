//! A primitive: everything a verbose line says about one oneDNN operation except its timing.

use crate::{Attributes, DataType, Engine, MemoryDesc, PrimitiveKind, PropKind};
use serde::Serialize;

/// One auxiliary `key:value` item (`alg:convolution_direct`, `flags:CH`, `axis:1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct AuxItem {
    pub key: String,
    pub value: String,
}

/// The identity of a primitive as logged. Two executions with equal `Primitive`s ran the same
/// problem with the same implementation; this is the unit of deduplication for aggregation,
/// benchdnn export and replay.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Primitive {
    pub engine: Engine,
    pub kind: PrimitiveKind,
    /// Implementation name (`brg_conv_fwd:avx10_1_512_amx`, `ref:any`, …), verbatim.
    pub implementation: String,
    pub prop_kind: PropKind,
    pub mds: Vec<MemoryDesc>,
    pub attrs: Attributes,
    pub aux: Vec<AuxItem>,
    /// Problem descriptor (`mb2_ic16oc16_ih14oh14kh3sh1dh0ph1_…`, `64x1024`, …), verbatim.
    pub problem: String,
}

impl Primitive {
    /// Memory descriptors in the current syntax, space separated (the converter's `mds` key).
    pub fn mds_string(&self) -> String {
        self.mds
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The descriptor the log lists for `role` (`src`, `wei`, `dst`, `diff_src`, `bia`, …), as
    /// listed: an `undef` one included, since "listed as undef" (a convolution without bias) and
    /// "not listed" differ for a rebuilt problem. [`Primitive::tensor`] skips absent ones.
    pub fn md(&self, role: &str) -> Option<&MemoryDesc> {
        self.mds.iter().find(|m| m.arg == role)
    }

    /// The first present descriptor, in listing order, whose role is one of `roles`: the
    /// spellings a tensor had across format generations (`src`/`data`, `wei`/`wei_layer`).
    pub fn tensor(&self, roles: &[&str]) -> Option<&MemoryDesc> {
        self.mds
            .iter()
            .find(|m| roles.contains(&m.arg.as_str()) && !m.is_absent())
    }

    /// Attributes in the converter's order (its `exts` key).
    pub fn exts_string(&self) -> String {
        self.attrs.canonical_string()
    }

    /// Auxiliary items as `k:v`, space separated (the converter's `aux` key).
    pub fn aux_string(&self) -> String {
        self.aux
            .iter()
            .map(|a| format!("{}:{}", a.key, a.value))
            .collect::<Vec<_>>()
            .join(" ")
    }

    pub fn aux_value(&self, key: &str) -> Option<&str> {
        self.aux
            .iter()
            .find(|a| a.key == key)
            .map(|a| a.value.as_str())
    }

    /// The algorithm (`alg:` auxiliary item), when the kind has one.
    pub fn algorithm(&self) -> Option<&str> {
        self.aux_value("alg")
    }

    /// Distinct data types of the tensors the primitive uses, in descriptor order, joined by
    /// `:` — `f32`, `bf16:f32` (bf16 with an f32 bias), `f32:bf16` (a reorder to bf16).
    pub fn dtype_summary(&self) -> String {
        let mut seen: Vec<&DataType> = Vec::new();
        for md in &self.mds {
            if md.data_type.is_undef() {
                continue;
            }
            if !seen.contains(&&md.data_type) {
                seen.push(&md.data_type);
            }
        }
        if seen.is_empty() {
            return "undef".into();
        }
        seen.iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join(":")
    }

    /// True for oneDNN's reference and other generic fallback implementations — the ones that
    /// are orders of magnitude slower than the JIT kernels when an optimized path exists.
    pub fn is_reference_impl(&self) -> bool {
        is_reference_impl(&self.implementation)
    }
}

/// See [`Primitive::is_reference_impl`].
pub fn is_reference_impl(implementation: &str) -> bool {
    implementation.split(['+', ':']).any(|part| {
        part == "ref"
            || part.starts_with("ref_") && !part.starts_with("ref_fused")
            || part == "simple"
    }) || implementation.contains("gemm:ref")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_implementations() {
        assert!(is_reference_impl("ref:any"));
        assert!(is_reference_impl("ref"));
        assert!(is_reference_impl("simple:any"));
        assert!(is_reference_impl("gemm:ref"));
        assert!(is_reference_impl("ref_int8:any"));
        assert!(!is_reference_impl("jit:avx512_core"));
        assert!(!is_reference_impl("brg_conv_fwd:avx10_1_512_amx"));
        // A fused wrapper around optimized kernels is not itself slow.
        assert!(!is_reference_impl(
            "ref_fused_convolution:any:brgconv_1x1:avx10_1_512_amx"
        ));
        assert!(!is_reference_impl("x64:gemm:jit"));
    }
}
