//! `backward-weights-dominance`: weight gradients cost far more than the forward pass.

use super::*;
use profilednn_model::{PrimitiveKind as K, PropKind};

pub const ID: &str = "backward-weights-dominance";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let conv: Vec<&Entry> = exec(ev)
        .filter(|e| matches!(e.primitive.kind.family(), K::Convolution | K::Deconvolution))
        .collect();
    let sum = |f: &dyn Fn(&PropKind) -> bool| -> (f64, u64) {
        conv.iter()
            .filter(|e| f(&e.primitive.prop_kind))
            .fold((0.0, 0), |(t, c), e| (t + e.time_ms(), c + e.calls))
    };
    let (fwd_ms, fwd_calls) = sum(&|p| p.is_forward());
    let (bwd_w_ms, bwd_w_calls) = sum(&|p| *p == PropKind::BackwardWeights);
    let (bwd_d_ms, bwd_d_calls) = sum(&|p| *p == PropKind::BackwardData);
    if bwd_w_calls == 0 {
        // A transformer's log has matmuls, which oneDNN logs without a direction: its backward
        // GEMMs are there, only not marked as such.
        let matmuls = ev
            .profile
            .entries
            .iter()
            .any(|e| e.primitive.kind == profilednn_model::PrimitiveKind::Matmul);
        return Err(if conv.is_empty() && matmuls {
            "no convolutions: the log's GEMMs are matmuls, which oneDNN logs without a direction \
             (forward and backward alike), so backward weights cannot be told apart"
                .into()
        } else {
            "no backward-weights convolutions (not a training log, or all frozen)".into()
        });
    }
    let ratio = if fwd_ms > 0.0 {
        bwd_w_ms / fwd_ms
    } else {
        f64::INFINITY
    };
    let calls_ratio = if fwd_calls > 0 {
        (bwd_w_calls + bwd_d_calls) as f64 / fwd_calls as f64
    } else {
        f64::INFINITY
    };
    // Each forward call has at most one backward-data and one backward-weights call.
    let excess_calls = calls_ratio > 2.0 + 1e-9;
    if ratio < t.bwd_weights_ratio && !excess_calls {
        return Err(format!(
            "backward-weights time is {ratio:.2}x the forward time (threshold {:.1}x); backward calls {calls_ratio:.2}x forward",
            t.bwd_weights_ratio
        ));
    }
    Ok(finding(
        ev,
        ID,
        format!(
            "Convolution weight gradients take {bwd_w_ms:.1} ms, {ratio:.1}x the forward convolutions ({fwd_ms:.1} ms)"
        ),
        map(vec![
            ("forward_ms", json!(fwd_ms)),
            ("backward_data_ms", json!(bwd_d_ms)),
            ("backward_weights_ms", json!(bwd_w_ms)),
            ("ratio_to_forward", json!(ratio)),
            ("forward_calls", json!(fwd_calls)),
            ("backward_data_calls", json!(bwd_d_calls)),
            ("backward_weights_calls", json!(bwd_w_calls)),
            (
                "heaviest",
                examples(
                    conv.iter()
                        .copied()
                        .filter(|e| e.primitive.prop_kind == PropKind::BackwardWeights),
                    5,
                ),
            ),
        ]),
        Some((bwd_w_ms - fwd_ms).max(0.0)),
        "the excess over the forward time (a weight-gradient pass costs about as much as forward)",
        &action(&ev.profile.metadata),
    ))
}

/// The advice depends on the CPU the log ran on: bf16 weight gradients only pay with bf16
/// units (AMX `brgconv_bwd_w`); without them oneDNN emulates bf16 through f32, slower
/// (`bf16-without-bf16-units`).
fn action(md: &profilednn_analysis::RunMetadata) -> String {
    let precision = if md.native_bf16() != Some(false) {
        "a larger batch, channels-last and, where the CPU's measured bf16 rate beats f32 \
         (AMX `brgconv_bwd_w`; `profilednn peak`, `advise --project`), bf16 help."
    } else {
        "a larger batch helps; keep f32 here: the log's CPU has no bf16 units (its ISA line), where \
         bf16 weight gradients are emulated through f32 and slower (see `bf16-without-bf16-units`)."
    };
    format!(
        "First check that frozen layers really are frozen: parameters of layers that are not \
         trained need `requires_grad_(False)` (torchvision detection models freeze the first \
         backbone stages via `trainable_backbone_layers`), or oneDNN still computes their weight \
         gradients. Then look at the heaviest shapes: weight-gradient kernels are slow for small \
         spatial sizes with many channels; {precision}"
    )
}
