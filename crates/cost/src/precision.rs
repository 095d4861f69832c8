//! The precision a primitive's arithmetic runs at, which picks its roofline ceiling.

use profilednn_model::{DataType, Primitive};
use serde::Serialize;

/// bf16 and f16 run on AVX512-BF16/FP16 or AMX units with other peaks than f32; int8 on
/// VNNI/AMX-INT8. `fpmath` attributes let f32 tensors use bf16 arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum MathPrecision {
    F32,
    Bf16,
    F16,
    Int8,
    F64,
}

impl MathPrecision {
    pub fn of(p: &Primitive) -> MathPrecision {
        // Weights decide for compute primitives (a bf16 conv may write f32), else the source.
        let md = p
            .tensor(&["wei", "wei_layer", "diff_wei"])
            .or_else(|| p.tensor(&["src", "data", "src_layer", "diff_dst"]))
            .or_else(|| p.mds.iter().find(|m| !m.is_absent()));
        let from_dt = match md.map(|m| &m.data_type) {
            Some(DataType::Bf16) => MathPrecision::Bf16,
            Some(DataType::F16) => MathPrecision::F16,
            Some(DataType::S8 | DataType::U8 | DataType::S4 | DataType::U4) => MathPrecision::Int8,
            Some(DataType::F64) => MathPrecision::F64,
            _ => MathPrecision::F32,
        };
        if from_dt == MathPrecision::F32 {
            match p.attrs.fpmath_mode() {
                Some("bf16") => return MathPrecision::Bf16,
                Some("f16") => return MathPrecision::F16,
                _ => {}
            }
        }
        from_dt
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            MathPrecision::F32 => "f32",
            MathPrecision::Bf16 => "bf16",
            MathPrecision::F16 => "f16",
            MathPrecision::Int8 => "int8",
            MathPrecision::F64 => "f64",
        }
    }
}
