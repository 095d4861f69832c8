//! `whole-step-bf16`: bf16 autocast judged on the whole training step, replayed through PyTorch
//! on this machine. For a transformer in f32 most of the step is outside oneDNN (GEMMs in the
//! BLAS, attention in ATen), so the oneDNN-only rules cannot say whether bf16 pays; and "the CPU
//! has bf16 units" does not say it either: on an AVX512-BF16 Zen 4, a small GPT's GEMMs ran 2×
//! faster in bf16 while its flash-attention backward ran 4× slower, and the step barely moved.

use super::*;
use crate::StepBaseline;

pub const ID: &str = "whole-step-bf16";

/// The projected speed-up below which a change is not worth the script's change (and the
/// replay's noise, a few per cent, could not tell it from none).
const PAYS: f64 = 1.05;

/// The as-recorded replay over the recorded step beyond which the figures are flagged.
const DRIFT: f64 = 1.25;

pub fn check(ev: &Evidence, _t: &Thresholds) -> Result<Finding, String> {
    let Some(w) = ev.step_what_ifs.iter().find(|w| w.transform == "--as bf16") else {
        return Err(
            "no whole-step bf16 projection (give --torch-trace with --project, or the file of `replay --torch-trace … --as bf16`)".to_string(),
        );
    };
    let s = w.speedup();
    let (g0, g1) = w.gemm_attention_ms;
    let sentence = format!(
        "the whole step replayed through {}: {:.1} ms as recorded{}, {:.1} ms in bf16 ({:.2}×; \
         GEMMs and attention {:.1} → {:.1} ms)",
        w.replayed_with,
        w.baseline_step_ms,
        match w.baseline {
            StepBaseline::ReplayedAsRecorded => "",
            StepBaseline::Recorded => " (the recording: no as-recorded replay given)",
        },
        w.projected_step_ms,
        s,
        g0,
        g1
    );
    // The as-recorded replay far from the recorded step: the machine was busy during one of
    // them, or the replay misses what the step does. Slightly off, the ratio may still hold and
    // is applied to the recorded step; beyond the trusted range no gain is given at all.
    let drift = w.drift();
    let (lo, hi) = crate::step_what_if::TRUSTED_DRIFT;
    let gain = w.gain_per_iteration_ms();
    let caution = if gain.is_none() {
        format!(
            " [no gain given: the step replayed as recorded took {drift:.2}× the recorded one, \
             outside {lo}–{hi}×: the replay is not this step (the machine was busy, or the \
             replay misses or repeats part of it); measure the change on the real step]"
        )
    } else if !(1.0 / DRIFT..=DRIFT).contains(&drift) {
        format!(
            " [caution: the step replayed as recorded took {drift:.2}× the recorded one: the \
             machine was busy, or the replay misses part of the step; the gain applies the \
             replay's ratio to the recorded step]"
        )
    } else {
        String::new()
    };
    let mut f = finding(
        ev,
        ID,
        format!(
            "bf16 autocast projected on the whole step: {:.1} → {:.1} ms per iteration ({:.2}× \
             against {}){caution}",
            w.baseline_step_ms,
            w.projected_step_ms,
            s,
            w.baseline.name()
        ),
        map(vec![
            ("logged_step_ms", json!(w.logged_step_ms)),
            ("baseline_step_ms", json!(w.baseline_step_ms)),
            ("projected_step_ms", json!(w.projected_step_ms)),
            ("speedup", json!(s)),
            ("replayed_over_recorded", json!(drift)),
            ("gemm_attention_ms", json!([g0, g1])),
        ]),
        None,
        &sentence,
        "Run forward and loss under `torch.autocast(\"cpu\", dtype=torch.bfloat16)` (the \
         optimizer stays f32); check with `profilednn.cpu.bf16_pays()` and a measured step.",
    );
    f.gain_ms_per_iteration = gain;
    f.gain_ms = gain.and_then(|g| Some(g * ev.summary.iterations.as_ref()?.count as f64));
    f.step_share = gain.map(|g| (g.abs() / w.logged_step_ms).min(1.0));
    if s < PAYS {
        f.not_recommended = Some(format!(
            "bf16 autocast is not recommended here: {sentence}: under {PAYS}× is no gain worth a \
             change (the CPU's bf16 units do not decide it, the step's ops do)"
        ));
    }
    Ok(f)
}
