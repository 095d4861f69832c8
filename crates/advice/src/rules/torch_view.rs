//! Rules on the PyTorch view (`report --torch-trace`): what runs outside oneDNN.

use super::*;
use profilednn_torchtrace::{OpRow, Phase, TorchJoin};

pub const LOSS: &str = "loss-as-elementwise-ops";
pub const NORM: &str = "normalization-as-elementwise-ops";
pub const OPTIMIZER: &str = "optimizer-as-many-ops";

fn view<'a>(ev: &'a Evidence) -> Result<(&'a TorchJoin, f64), String> {
    let j = ev.torch.ok_or(
        "no PyTorch trace (record with `profilednn record --torch`, pass --torch-trace) (not applicable)",
    )?;
    let per = j.iterations.map_or(1.0, |n| n as f64);
    Ok((j, per))
}

fn iteration_ms(j: &TorchJoin) -> f64 {
    j.phases.iter().map(|p| p.time_ms).fold(0.0, |a, b| a + b)
}

fn rows<'a>(
    j: &'a TorchJoin,
    phase: Phase,
    f: impl Fn(&str) -> bool + 'a,
) -> impl Iterator<Item = &'a OpRow> + 'a {
    j.ops
        .iter()
        .filter(move |r| r.phase == Some(phase) && f(&r.name))
}

/// Autograd functions of a loss written as element-wise ops (torchvision's focal loss:
/// sigmoid, BCE with logits, 1 − p, pow, mean).
const LOSS_BACKWARD: [&str; 6] = [
    "BinaryCrossEntropyWithLogitsBackward",
    "SigmoidBackward",
    "RsubBackward",
    "PowBackward",
    "MeanBackward",
    "SumBackward",
];

pub fn loss(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per) = view(ev)?;
    let total = iteration_ms(j);
    let fwd: Vec<&OpRow> = rows(j, Phase::Loss, |_| true).collect();
    let bwd: Vec<&OpRow> = rows(j, Phase::Backward, |n| {
        LOSS_BACKWARD.iter().any(|k| n.contains(k))
    })
    .collect();
    let kinds = bwd.len();
    let time: f64 = fwd
        .iter()
        .chain(&bwd)
        .map(|r| r.time_ms)
        .fold(0.0, |a, b| a + b);
    let share = if total > 0.0 { time / total } else { 0.0 };
    if kinds < 3 || share < t.loss_share {
        return Err(format!(
            "the loss takes {} of the step as {kinds} element-wise backward kinds (fires at ≥ 3 kinds and {})",
            pct(share),
            pct(t.loss_share)
        ));
    }
    let names: Vec<&str> = bwd
        .iter()
        .map(|r| r.name.rsplit(": ").next().unwrap_or(&r.name))
        .collect();
    Ok(trace_finding(
        ev,
        LOSS,
        format!(
            "The loss runs as a chain of element-wise ops outside oneDNN: {} of the training step ({:.2} ms per iteration)",
            pct(share),
            time / per
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms_per_iteration", json!(time / per)),
            ("backward_functions", json!(names)),
        ]),
        Some(time),
        share,
        "the loss' forward and the backward of its element-wise chain (a fused loss reads and writes each tensor once)",
        "Use a fused loss: `profilednn.ops.sigmoid_focal_loss` is a drop-in for torchvision's \
         (one pass forward, one backward, class-index targets without a one-hot tensor).",
    ))
}

pub fn normalization(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per) = view(ev)?;
    let total = iteration_ms(j);
    let convs: u64 = rows(j, Phase::Forward, |n| n.contains("conv"))
        .map(|r| r.calls)
        .sum();
    let bn: u64 = rows(j, Phase::Forward, |n| n.contains("batch_norm"))
        .map(|r| r.calls)
        .sum();
    let ew: Vec<&OpRow> =
        rows(j, Phase::Forward, |n| n == "aten::mul" || n == "aten::add").collect();
    let muls: u64 = ew
        .iter()
        .filter(|r| r.name == "aten::mul")
        .map(|r| r.calls)
        .sum();
    let time: f64 = ew.iter().map(|r| r.time_ms).fold(0.0, |a, b| a + b);
    let share = if total > 0.0 { time / total } else { 0.0 };
    if convs == 0 || bn > 0 || (muls as f64) < 0.5 * convs as f64 || share < t.normalization_share {
        return Err(format!(
            "forward: {} convolutions, {bn} batch_norm ops, {muls} mul ops; element-wise mul/add {} of the step",
            convs,
            pct(share)
        ));
    }
    Ok(trace_finding(
        ev,
        NORM,
        format!(
            "Normalization runs as separate mul and add ops after {:.0} convolutions per iteration ({} of the step): frozen batch-norm not folded",
            convs as f64 / per,
            pct(share)
        ),
        map(vec![
            ("share", json!(share)),
            ("mul_calls_per_iteration", json!(muls as f64 / per)),
            ("convolutions_per_iteration", json!(convs as f64 / per)),
            ("time_ms_per_iteration", json!(time / per)),
        ]),
        Some(time),
        share,
        "the separate mul/add passes (folded into the convolution's weights and bias they cost nothing)",
        "torchvision's FrozenBatchNorm2d computes x·scale + shift as two full passes. Fold the \
         frozen statistics into the preceding convolution (w' = w·scale, b' = b·scale + shift): \
         `profilednn.nn.fold_frozen_batchnorm(model)` does it in place for training (the \
         convolutions keep their parameters and gradients, the state dict its keys), or let \
         `torch.compile` (PyTorch 2.0 and later) fuse it; `torch.jit.freeze` folds it for inference.",
    ))
}

pub fn optimizer(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per) = view(ev)?;
    let total = iteration_ms(j);
    let Some(opt) = j
        .phases
        .iter()
        .find(|p| p.name == Phase::Optimizer.as_str())
    else {
        return Err("no optimizer step in the trace (`Optimizer.step` annotations)".into());
    };
    let calls = opt.calls as f64 / per;
    let share = if total > 0.0 {
        opt.time_ms / total
    } else {
        0.0
    };
    if calls < t.optimizer_ops || share < t.optimizer_share {
        return Err(format!(
            "the optimizer step runs {calls:.0} ops per iteration in {} of the step (fires at ≥ {:.0} ops and {})",
            pct(share),
            t.optimizer_ops,
            pct(t.optimizer_share)
        ));
    }
    Ok(trace_finding(
        ev,
        OPTIMIZER,
        format!(
            "The optimizer step runs as {calls:.0} small ops per iteration ({} of the step)",
            pct(share)
        ),
        map(vec![
            ("ops_per_iteration", json!(calls)),
            ("share", json!(share)),
            ("time_ms_per_iteration", json!(opt.time_ms / per)),
        ]),
        Some(opt.time_ms * 0.5),
        share,
        "half of the step's time (fused steps run near the memory bound; for-loops pay per-op overhead)",
        "Use a fused optimizer step: `torch.optim.SGD/Adam/AdamW(..., fused=True)`, or \
         `profilednn.optim.SGD/AdamW/LAMB` (LAMB has no fused PyTorch version).",
    ))
}

pub const DATA: &str = "data-loading-stall";

pub fn data(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per) = view(ev)?;
    let total = iteration_ms(j);
    let Some(d) = j.phases.iter().find(|p| p.name == Phase::Data.as_str()) else {
        return Err(
            "no data-loading phase in the trace (a `data` record_function or DataLoader)".into(),
        );
    };
    let share = if total > 0.0 { d.time_ms / total } else { 0.0 };
    if share < t.data_share {
        return Err(format!(
            "data loading takes {} of the step (threshold {})",
            pct(share),
            pct(t.data_share)
        ));
    }
    Ok(trace_finding(
        ev,
        DATA,
        format!(
            "Data loading takes {} of the training step ({:.2} ms per iteration) on the training thread",
            pct(share),
            d.time_ms / per
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms_per_iteration", json!(d.time_ms / per)),
        ]),
        Some(d.time_ms),
        share,
        "all of it, when the loading overlaps with compute in worker processes",
        "Move data loading off the training thread: `DataLoader(num_workers=N, pin_memory=False, \
         persistent_workers=True, prefetch_factor=2)`; do decoding and augmentation in the workers \
         (leave cores for them: fewer OpenMP threads for the model).",
    ))
}
