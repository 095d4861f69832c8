//! Rules on the framework's own ops (`--torch-trace`): the GEMMs that run in the BLAS instead of
//! oneDNN, attention, and element-wise ops that nothing fused. On today's PyTorch these are most
//! of a transformer's step, and oneDNN's log does not see them.
//!
//! Each gain is the time the ops lose against the roofline (the machine's measured peaks and
//! bandwidth, `--machine` or the saved profile): what the step would save if they ran at their
//! bound. Without a machine profile there is no roof, and no gain is claimed.

use super::*;
use profilednn_torchtrace::framework::FrameworkOpRow;
use profilednn_torchtrace::TorchJoin;

pub const GEMM: &str = "gemm-outside-onednn";
pub const ATTENTION: &str = "attention-share";
pub const ELEMENTWISE: &str = "elementwise-unfused";

/// The trace's step per steady iteration, and the divisor of its totals.
fn step<'a>(ev: &Evidence<'a>) -> Result<(&'a TorchJoin, f64, f64), String> {
    let j = ev.torch.ok_or(
        "no PyTorch trace (record with `profilednn record --torch`, pass --torch-trace) (not applicable)",
    )?;
    if j.framework.costed_ms <= 0.0 {
        return Err(
            "no framework op has a cost (a trace recorded without shapes: record_shapes=True, as \
             `profilednn record --torch` does) (not applicable)"
                .into(),
        );
    }
    let per = j.iterations.unwrap_or(1).max(1) as f64;
    let step = j
        .steady_step_ms()
        .unwrap_or_else(|| j.phases.iter().fold(0.0, |a, p| a + p.time_ms) / per);
    if step <= 0.0 {
        return Err("the trace has no step time (not applicable)".into());
    }
    Ok((j, per, step))
}

/// Costed rows of a family that ran where `runs_in` says.
fn family<'a>(
    j: &'a TorchJoin,
    families: &[&str],
    outside_onednn: bool,
) -> Vec<&'a FrameworkOpRow> {
    j.framework
        .rows
        .iter()
        .filter(|r| r.costed_calls > 0)
        .filter(|r| r.family.is_some_and(|f| families.contains(&f)))
        .filter(|r| !outside_onednn || r.runs_in != "oneDNN")
        .collect()
}

/// Per steady iteration: time, time lost against the roofline (None without roofs), and the
/// rows' efficiency at their roofs.
struct Totals {
    time: f64,
    lost: Option<f64>,
    efficiency: Option<f64>,
    gflops: Option<f64>,
}

fn totals(rows: &[&FrameworkOpRow], per: f64) -> Totals {
    // The costed calls' time (a row mixes costed and uncosted calls when some lacked shapes),
    // as their flops and roof are of those calls.
    let time = rows.iter().fold(0.0, |a, r| {
        a + r.time_ms * r.costed_calls as f64 / r.calls.max(1) as f64
    }) / per;
    let roofed = rows.iter().all(|r| r.roofline_ms.is_some()) && !rows.is_empty();
    // No time lost on suspect roofs (their `lost_ms` withheld), though the share of the bound
    // is still given, marked.
    let lost = (roofed && rows.iter().all(|r| r.lost_ms.is_some()))
        .then(|| rows.iter().fold(0.0, |a, r| a + r.lost_ms.unwrap_or(0.0)) / per);
    let roof = rows
        .iter()
        .fold(0.0, |a, r| a + r.roofline_ms.unwrap_or(0.0))
        / per;
    let flops = rows
        .iter()
        .fold(0.0, |a, r| a + (r.flops + r.extra_flops) as f64)
        / per;
    Totals {
        time,
        lost,
        efficiency: (roofed && time > 0.0).then(|| roof / time),
        gflops: (time > 0.0).then(|| flops / time / 1e6),
    }
}

/// A per-iteration figure over the whole log (rules report totals over the log's iterations).
fn over_log(ev: &Evidence, per_iteration: Option<f64>) -> Option<f64> {
    per_iteration.map(|g| g * log_iterations(ev))
}

/// What each rule's finding carries: the share of the step, time and loss per iteration, the
/// time over the log (the finding's share of the step is taken from it), the rates, the ops.
fn evidence(ev: &Evidence, share: f64, s: &Totals, names: &[&str]) -> Map<String, Value> {
    map(vec![
        ("share", json!(share)),
        ("time_ms_per_iteration", json!(s.time)),
        ("time_ms", json!(over_log(ev, Some(s.time)))),
        ("gflops", json!(s.gflops)),
        ("efficiency", json!(s.efficiency)),
        ("lost_ms_per_iteration", json!(s.lost)),
        ("ops", json!(names)),
    ])
}

fn roof_text(t: &Totals) -> String {
    match (t.efficiency, t.lost) {
        (Some(e), Some(l)) => format!(", {} of their roofline, {l:.2} ms lost", pct(e)),
        (Some(e), None) => format!(
            ", {} of their roofline (⚠ the roofs are suspect: no time lost is given)",
            pct(e)
        ),
        _ => " (no machine profile: `profilednn peak` measures one, for their efficiency)".into(),
    }
}

const GAIN_BASIS: &str =
    "time lost against the roofline (the machine profile's peaks and bandwidth)";

pub fn gemm(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per, step) = step(ev)?;
    let rows = family(j, &["gemm"], false);
    let blas: Vec<&FrameworkOpRow> = rows
        .iter()
        .copied()
        .filter(|r| r.runs_in == "BLAS")
        .collect();
    let s = totals(&blas, per);
    let share = s.time / step;
    if share < t.framework_gemm_share {
        return Err(format!(
            "GEMMs in the BLAS take {} of the step (fires at {})",
            pct(share),
            pct(t.framework_gemm_share)
        ));
    }
    let names: Vec<&str> = blas.iter().map(|r| r.name.as_str()).collect();
    Ok(trace_finding(
        ev,
        GEMM,
        format!(
            "GEMMs run in PyTorch's BLAS, not oneDNN: {} of the step ({:.2} ms per iteration) at {:.1} GFLOP/s{}",
            pct(share),
            s.time,
            s.gflops.unwrap_or(0.0),
            roof_text(&s)
        ),
        evidence(ev, share, &s, &names),
        s.lost.map(|l| l * per),
        share,
        GAIN_BASIS,
        "f32 `nn.Linear` and `matmul` run in the BLAS (MKL); under bf16 autocast they become \
         oneDNN matmuls. Whether that pays depends on this CPU's bf16 rate: project it first \
         (`profilednn replay LOG --torch-trace TRACE --as bf16`, then `profilednn project`, or \
         `profilednn advise --project --torch-trace TRACE`); `profilednn.optimize` measures it \
         on the model itself.",
    ))
}

pub fn attention(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per, step) = step(ev)?;
    let rows = family(j, &["attention"], true);
    let s = totals(&rows, per);
    let share = s.time / step;
    if share < t.attention_share {
        return Err(format!(
            "attention takes {} of the step (fires at {})",
            pct(share),
            pct(t.attention_share)
        ));
    }
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    Ok(trace_finding(
        ev,
        ATTENTION,
        format!(
            "Attention (ATen's scaled-dot-product kernels) takes {} of the step ({:.2} ms per iteration){}",
            pct(share),
            s.time,
            roof_text(&s)
        ),
        evidence(ev, share, &s, &names),
        s.lost.map(|l| l * per),
        share,
        GAIN_BASIS,
        "Call `F.scaled_dot_product_attention` with `is_causal=True` rather than an explicit mask \
         (the flash kernel skips the masked half); short sequences spend their time in the \
         kernel's setup, so fewer, longer ones (or a larger batch) pay; bf16 autocast halves its \
         bytes — project it before switching.",
    ))
}

pub fn elementwise(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let (j, per, step) = step(ev)?;
    // Compiled regions that take most of the step: Inductor fuses its element-wise ops already
    // (a model with one compiled submodule still gets the advice for the rest).
    let compiled = j.framework.compiled_region_ms / per;
    if compiled > 0.5 * step {
        return Err(format!(
            "the model is compiled ({} of the step in compiled regions): Inductor fuses its \
             element-wise ops (not applicable)",
            pct(compiled / step)
        ));
    }
    let rows = family(j, &["elementwise", "normalization"], true);
    let s = totals(&rows, per);
    let share = s.time / step;
    if share < t.elementwise_share {
        return Err(format!(
            "element-wise and normalization ops take {} of the step (fires at {})",
            pct(share),
            pct(t.elementwise_share)
        ));
    }
    let mut top: Vec<&&FrameworkOpRow> = rows.iter().collect();
    top.sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms));
    let names: Vec<&str> = top.iter().take(5).map(|r| r.name.as_str()).collect();
    Ok(trace_finding(
        ev,
        ELEMENTWISE,
        format!(
            "Much of the step is element-wise and normalization ops, one pass over memory each: {} \
             ({:.2} ms per iteration; largest {}){}",
            pct(share),
            s.time,
            names.join(", "),
            roof_text(&s)
        ),
        evidence(ev, share, &s, &names),
        s.lost.map(|l| l * per),
        share,
        GAIN_BASIS,
        "Fuse them: `torch.compile` the model (Inductor generates one loop per chain of \
         element-wise ops), or use ProfileDNN's drop-ins (`profilednn.optimize` applies the fused \
         optimizer and loss where they pay).",
    ))
}
