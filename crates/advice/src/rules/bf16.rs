//! `f32-on-bf16-hardware`: f32 compute on a CPU with bf16 units.

use super::*;
use profilednn_cost::MathPrecision;

pub const ID: &str = "f32-on-bf16-hardware";

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let md = &ev.profile.metadata;
    if !md.has_bf16_hardware() {
        return Err(if md.isa.is_empty() {
            "the log has no ISA header line (not applicable)".into()
        } else {
            format!("the log's ISA has no bf16 units ({})", md.isa.join("; "))
        });
    }
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
    Ok(finding(
        ev,
        ID,
        format!(
            "f32 convolutions/matmuls take {} of oneDNN time ({time:.1} ms) on a CPU with bf16 units ({})",
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
    ))
}
