//! `unfused-post-ops`: separate element-wise passes over a convolution's or matmul's output.
//!
//! The profile does not keep the order of calls, so "followed by" is recognised by shape: an
//! eltwise, binary or inference batch-norm whose tensor has exactly the dimensions of a forward
//! convolution's, inner product's or matmul's output. Training batch-norm (it needs the batch's
//! statistics) is not counted.

use super::*;
use profilednn_cost::data_dims;
use profilednn_model::{PrimitiveKind as K, PropKind};
use std::collections::HashSet;

pub const ID: &str = "unfused-post-ops";

fn is_forward_or_undef(p: &PropKind) -> bool {
    p.is_forward() || *p == PropKind::Undef
}

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let producers: HashSet<Vec<u64>> = exec(ev)
        .filter(|e| {
            matches!(
                e.primitive.kind.family(),
                K::Convolution | K::Deconvolution | K::InnerProduct | K::Matmul
            ) && is_forward_or_undef(&e.primitive.prop_kind)
        })
        .filter_map(|e| data_dims(&e.primitive))
        .collect();
    if producers.is_empty() {
        return Err("no forward convolution, inner product or matmul in the log".into());
    }
    let fusable: Vec<&Entry> = exec(ev)
        .filter(|e| {
            let p = &e.primitive;
            let candidate = match p.kind.family() {
                K::Eltwise => p.prop_kind.is_forward(),
                K::Binary => true,
                K::BatchNormalization => {
                    p.prop_kind == PropKind::ForwardInference
                        || p.aux_value("flags").is_some_and(|f| f.contains('G'))
                }
                _ => false,
            };
            candidate && data_dims(p).is_some_and(|d| producers.contains(&d))
        })
        .collect();
    let total = total_ms(ev);
    let (time, share) = time_share(total, &fusable);
    if share < t.unfused_share {
        return Err(format!(
            "separate eltwise/binary/normalization passes over producer outputs take {} (threshold {})",
            pct(share),
            pct(t.unfused_share)
        ));
    }
    let by_kind = |k: K| -> f64 {
        fusable
            .iter()
            .filter(|e| e.primitive.kind.family() == k)
            .fold(0.0, |a, e| a + e.time_ms())
    };
    Ok(finding(
        ev,
        ID,
        format!(
            "{} separate eltwise/binary/normalization primitive(s) run over convolution or matmul outputs: {} of oneDNN time ({time:.1} ms)",
            fusable.len(),
            pct(share)
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("eltwise_ms", json!(by_kind(K::Eltwise))),
            ("binary_ms", json!(by_kind(K::Binary))),
            ("batch_normalization_ms", json!(by_kind(K::BatchNormalization))),
            ("heaviest", examples(fusable.iter().copied(), 5)),
        ]),
        Some(time),
        "their whole time: as post-ops they run while the output is still in registers",
        "Fuse them into the producer as oneDNN post-ops: conv/matmul + ReLU/GELU/add. For \
         inference and frozen layers, fold batch-norm (torchvision's FrozenBatchNorm2d runs as a \
         separate mul and add) into the convolution's weights and bias \
         (`profilednn.nn.fold_frozen_batchnorm(model)`, in training too); `torch.compile` \
         (PyTorch 2.0 and later) fuses element-wise chains into generated kernels, and \
         `torch.jit.freeze` folds them for inference.",
    ))
}
