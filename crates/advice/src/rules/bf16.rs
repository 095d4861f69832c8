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

/// The measured bf16 and f32 all-core rates of the machine profile given (`profilednn peak`,
/// or a spec sheet), as (machine, bf16, f32) GFLOP/s. bf16 is the rate of the unit bf16 would
/// run on: AMX where the log's CPU has it (`amx`). A profile that lists its units but not AMX
/// (a schema-v1 profile measured the dot product only, or the OS did not grant the tiles) gives
/// no bf16 rate for such a CPU: its dot-product figure once made this rule call bf16 0.49x on a
/// Xeon where a real bf16 run was 1.71x faster (issue 52).
fn rates<'a>(ev: &'a Evidence, amx: bool) -> Option<(&'a str, f64, f64)> {
    let e = ev.summary.efficiency.as_ref()?;
    let bf16 = if amx && !e.unit_gflops.is_empty() {
        *e.unit_gflops.get("bf16")?.get("amx")?
    } else {
        *e.peak_gflops.get("bf16")?
    };
    let f32 = *e.peak_gflops.get("f32")?;
    (bf16 > 0.0 && f32 > 0.0).then_some((e.machine.as_str(), bf16, f32))
}

/// Below this bf16/f32 rate, bf16 cannot speed compute-bound layers up (it still halves the
/// bytes of memory-bound ones): AVX512-BF16 without AMX measured 0.53x on a Xeon family 6
/// model 207, where a ResNet-18 in bf16 ran 1.10x slower than in f32.
const PAYING_RATE: f64 = 1.2;

pub fn check(ev: &Evidence, t: &Thresholds) -> Result<Finding, String> {
    let md = &ev.profile.metadata;
    let projected = projection(ev);
    let native = md.native_bf16();
    if native != Some(true) && projected.is_none() {
        return Err(match (md.isa.is_empty(), native) {
            (true, _) => "the log has no ISA header line (not applicable)".into(),
            (false, None) => format!(
                "the log's ISA is unknown ({}): measure it with `profilednn peak`",
                md.isa.join("; ")
            ),
            (false, _) => format!("the log's ISA has no bf16 units ({})", md.isa.join("; ")),
        });
    }
    let (f32_compute, time, share) = f32_compute(ev, t)?;
    let units = md.cpu_units().and_then(|u| u.units());
    let amx = units.is_some_and(|u| u.amx_bf16);
    let cpu = match (native, amx) {
        (Some(true), true) => "with bf16 units and AMX",
        (Some(true), false) => "with bf16 dot products but no AMX",
        (Some(false), _) => "without bf16 units",
        (None, _) => "of unknown units",
    };
    let rate = rates(ev, amx);
    // A measured rate that does not pay: why bf16 is not recommended here (a projection, when
    // given, decides instead).
    let mut slower = None;
    let (gain, basis) = match (rate, amx) {
        (Some((m, b, f)), _) if b / f >= PAYING_RATE => (
            Some(time * (1.0 - f / b)),
            format!(
                "the f32 compute time less the same work at the measured bf16 rate ({b:.0} \
                 against {f:.0} GFLOP/s in f32, {:.2}x, machine profile \"{m}\"): an upper \
                 bound, reached by compute-bound layers",
                b / f
            ),
        ),
        (Some((m, b, f)), _) => {
            let without = if amx { "" } else { " without AMX" };
            slower = Some(format!(
                "bf16 runs natively here ({}), but at {:.2}x the f32 rate{without} (measured: {b:.0} \
                 against {f:.0} GFLOP/s, machine profile \"{m}\"): compute-bound layers will not \
                 speed up, memory-bound ones may; `advise --project` replays bf16 on this machine \
                 before you change the training script",
                md.isa.join("; "),
                b / f
            ));
            (None, String::new())
        }
        (None, true) => (
            Some(0.5 * time),
            "half of the f32 compute time: AMX's bf16 tiles run many times the f32 FMA rate (the \
             AMX Xeon's bf16 ResNet-50 training measured 1.7-1.8x the f32 speed); `profilednn \
             peak` measures this machine's rates"
                .to_string(),
        ),
        (None, false) => (
            None,
            "not estimable: without AMX, bf16 dot products may run slower than f32 FMAs (0.53x on \
             a Xeon family 6 model 207); measure the rates with `profilednn peak` or project the \
             change with `advise --project`"
                .to_string(),
        ),
    };
    let mut f = finding(
        ev,
        ID,
        format!(
            "f32 convolutions/matmuls take {} of oneDNN time ({time:.1} ms) on a CPU {cpu} ({})",
            pct(share),
            md.isa.join("; ")
        ),
        map(vec![
            ("share", json!(share)),
            ("time_ms", json!(time)),
            ("isa", json!(md.isa)),
            ("units", json!(units)),
            (
                "measured_rate",
                json!(rate.map(|(m, b, f)| json!({"machine": m, "bf16_gflops": b, "f32_gflops": f}))),
            ),
            ("heaviest", examples(f32_compute.iter().copied(), 5)),
        ]),
        gain,
        &basis,
        "Train in bf16: wrap forward and loss in `with torch.autocast(\"cpu\", dtype=torch.bfloat16):` \
         (any PyTorch 2.x; `profilednn.cpu.bf16_pays()` measures whether it pays here), keep the loss and \
         reductions in f32 (autocast does), and keep f32 master weights in the optimizer.",
    );
    if projected.is_none() {
        f.not_recommended = slower;
    }
    Ok(match projected {
        Some(p) => projected::restate(ev, f, p, "bf16", ""),
        None => f,
    })
}
