//! `f32-on-bf16-hardware`: f32 compute on a CPU with bf16 units.
//!
//! With a bf16 what-if projection the rule states the projected change on this machine instead
//! of "half the compute time", and considers bf16 on a CPU without bf16 units too: there the
//! projection is what shows that bf16 would be slower, and the rule says so instead of firing.

use super::*;
use crate::{Change, Projected, WantedWhatIf};
use profilednn_cost::MathPrecision;

pub const ID: &str = "f32-on-bf16-hardware";

/// The what-if this rule speaks for: bf16 autocast, in channels-last (the layout bf16 kernels
/// are fastest in, and the one PyTorch recommends with autocast).
const WHAT_IF: Change = Change {
    bf16: true,
    layout: crate::Layout::ChannelsLast,
    other: false,
};

/// Time and share of oneDNN time in f32 compute primitives, or why the rule is quiet.
fn f32_compute<'a>(ev: &'a Evidence, t: &Thresholds) -> Result<(Vec<&'a Entry>, f64, f64), String> {
    let total = total_ms(ev);
    let f32_compute: Vec<&Entry> = exec(ev)
        .filter(|e| e.primitive.kind.is_compute_heavy())
        .filter(|e| matches!(&e.cost, Ok(c) if c.precision == MathPrecision::F32))
        .collect();
    let (time, share) = time_share(total, &f32_compute);
    if share < t.f32_compute_share {
        return Err(format!(
            "f32 compute primitives take {} of oneDNN time (threshold {})",
            pct(share),
            pct(t.f32_compute_share)
        ));
    }
    Ok((f32_compute, time, share))
}

/// Any bf16 what-if of the same work (any layout); the fastest is the one to state.
fn projection<'a>(ev: &'a Evidence) -> Option<&'a Projected> {
    Projected::fastest(ev.projections, |c| c.bf16 && !c.other)
}

pub fn wanted(ev: &Evidence, t: &Thresholds) -> Option<WantedWhatIf> {
    f32_compute(ev, t).ok().map(|_| WantedWhatIf {
        rule: ID,
        change: WHAT_IF,
    })
}

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let md = &ev.profile.metadata;
    let projected = projection(ev);
    if !md.has_bf16_hardware() && projected.is_none() {
        return Err(if md.isa.is_empty() {
            "the log has no ISA header line (not applicable)".into()
        } else {
            format!("the log's ISA has no bf16 units ({})", md.isa.join("; "))
        });
    }
    let (f32_compute, time, share) = f32_compute(ev, t)?;
    let cpu = if md.has_bf16_hardware() {
        "with"
    } else {
        "without"
    };
    let f = finding(
        ev,
        ID,
        format!(
            "f32 convolutions/matmuls take {} of oneDNN time ({time:.1} ms) on a CPU {cpu} bf16 units ({})",
            pct(share),
            md.isa.join("; ")
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("isa", json!(md.isa)),
            ("heaviest", examples(f32_compute.iter().copied(), 5)),
        ]),
        Some(0.5 * time),
        "half of the f32 compute time: bf16 doubles peak throughput on AVX512-BF16 and more with AMX",
        "Train in bf16: wrap forward and loss in `with torch.autocast(\"cpu\", dtype=torch.bfloat16):` \
         (or `ipex.optimize(model, optimizer, dtype=torch.bfloat16)`), keep the loss and \
         reductions in f32 (autocast does), and keep f32 master weights in the optimizer.",
    );
    Ok(match projected {
        Some(p) => projected::restate(ev, f, p, "bf16", ""),
        None => f,
    })
}
