//! The whole step on the target: the oneDNN part, the framework ops (with a trace) and the
//! rest, each moved by its own rule, then the phases, the band, the assumptions.

use super::roofs::Roofs;
use super::{
    band, framework, onednn, Family, Input, Options, Part, TargetProfile, TargetProjection,
};
use profilednn_machine::MachineProfile;
use profilednn_torchtrace::TorchJoin;

/// Projects `input`, recorded on `source`, onto `target`.
pub fn project_to(
    input: &Input,
    source: &MachineProfile,
    target: &TargetProfile,
    opts: &Options,
) -> TargetProjection {
    let log_threads = input.profile.metadata.threads.map(|t| t as usize);
    let src_threads = log_threads.or(source.threads).unwrap_or(1);
    let threads = opts
        .threads
        .or(log_threads)
        .or(target.profile.threads)
        .unwrap_or(1);
    let src = Roofs::at(source, src_threads);
    let tgt = Roofs::at(&target.profile, threads);
    let per = input
        .profile
        .iterations
        .as_ref()
        .map_or(1.0, |i| i.count.max(1) as f64);
    let one = onednn::project(input.profile, input.logged, &src, &tgt, per);
    let fw = input.join.map(|j| framework::project(j, &src, &tgt));
    let fw_logged = fw.as_ref().map_or(0.0, |f| f.logged_ms);
    let logged_step = match input.join {
        Some(j) => j
            .steady_step_ms()
            .unwrap_or(j.framework.top_level_ms / j.iterations.unwrap_or(1).max(1) as f64),
        None => one.logged_ms + outside_ms(input).unwrap_or(0.0),
    };
    let rest_logged = (logged_step - one.logged_ms - fw_logged).max(0.0);
    let (rest_ratio, rest_note) = rest_ratio(&src, &tgt);
    let rest_projected = rest_logged * rest_ratio;
    let projected = one.projected_ms + fw.as_ref().map_or(0.0, |f| f.projected_ms) + rest_projected;
    let mut parts = vec![Part {
        name: "oneDNN".into(),
        logged_ms: one.logged_ms,
        projected_ms: one.projected_ms,
    }];
    if let Some(f) = &fw {
        parts.push(Part {
            name: "framework ops (costed)".into(),
            logged_ms: f.logged_ms,
            projected_ms: f.projected_ms,
        });
    }
    let rest_name = if input.join.is_some() {
        "rest (uncosted ops, Python, dispatch)"
    } else {
        "outside oneDNN (framework ops, Python, dispatch)"
    };
    parts.push(Part {
        name: rest_name.into(),
        logged_ms: rest_logged,
        projected_ms: rest_projected,
    });
    let mut families = one.families.clone();
    if let Some(f) = &fw {
        families.extend(f.families.iter().cloned());
    }
    let mut rest_family = Family::new("rest", rest_name);
    rest_family.add(rest_logged, rest_projected, false);
    rest_family.scaled_by = Some(rest_note.clone());
    families.push(rest_family);
    families.sort_by(|a, b| b.logged_ms.total_cmp(&a.logged_ms));
    let phases = input
        .join
        .map(|j| phases(j, &one, fw.as_ref(), rest_logged, rest_projected))
        .unwrap_or_default();
    let notes = super::notes::Notes::of(input, target, &src, &tgt, &one, fw.as_ref(), rest_note);
    let stand_ins = notes.stand_ins;
    TargetProjection {
        target: target.profile.name.clone(),
        profile: target.path.clone(),
        profile_kind: target.kind(),
        threads,
        logged_step_ms: logged_step,
        projected_step_ms: projected,
        band: band::band(projected, target.is_spec_sheet(), stand_ins),
        ratio: if logged_step > 0.0 {
            projected / logged_step
        } else {
            1.0
        },
        parts,
        families,
        phases,
        unit_changes: one
            .unit_changes
            .iter()
            .map(|(k, v)| Part {
                name: k.clone(),
                logged_ms: *v,
                projected_ms: 0.0,
            })
            .collect(),
        emulated: notes.emulated,
        assumptions: notes.assumptions,
        not_modelled: notes.not_modelled,
        epoch: None,
    }
}

/// Time outside oneDNN per iteration, from the log alone: the steady iterations' median, else
/// the timestamps' span less oneDNN time.
fn outside_ms(input: &Input) -> Option<f64> {
    if let Some((ms, _)) = input.logged.and_then(|l| l.outside) {
        return Some(ms);
    }
    let p = input.profile;
    let per = p.iterations.as_ref().map_or(1.0, |i| i.count.max(1) as f64);
    p.timestamps
        .map(|(a, b)| ((b - a) - p.exec_time_ms()).max(0.0) / per)
}

/// The rest's scale: one core's f32 peak on the source over the target's (a proxy for
/// single-thread speed), 1 when either is unknown.
fn rest_ratio(src: &Roofs, tgt: &Roofs) -> (f64, String) {
    match (src.single_core_f32(), tgt.single_core_f32()) {
        (Some((s, sw)), Some((t, tw))) if s > 0.0 && t > 0.0 => (
            s / t,
            format!(
                "single-core f32 peak ratio {s:.1} / {t:.1} GFLOP/s = ×{:.3} (source {sw}, \
                 target {tw}): a proxy for single-thread speed, not a measurement of it",
                s / t
            ),
        ),
        _ => (
            1.0,
            "carried over unchanged: a one-core f32 peak is unknown on one side".into(),
        ),
    }
}

/// Each phase's oneDNN time moved by the oneDNN part's ratio, the rest of it by the
/// framework-and-rest ratio.
fn phases(
    j: &TorchJoin,
    one: &onednn::OnednnPart,
    fw: Option<&framework::FrameworkPart>,
    rest_logged: f64,
    rest_projected: f64,
) -> Vec<Part> {
    let per = j.iterations.unwrap_or(1).max(1) as f64;
    let ratio = |p: f64, l: f64| if l > 0.0 { p / l } else { 1.0 };
    let r_one = ratio(one.projected_ms, one.logged_ms);
    let (fl, fp) = fw.map_or((0.0, 0.0), |f| (f.logged_ms, f.projected_ms));
    let r_out = ratio(fp + rest_projected, fl + rest_logged);
    j.phases
        .iter()
        .map(|p| {
            let onednn = p.onednn_ms / per;
            let outside = (p.time_ms / per - onednn).max(0.0);
            Part {
                name: p.name.clone(),
                logged_ms: p.time_ms / per,
                projected_ms: onednn * r_one + outside * r_out,
            }
        })
        .collect()
}
