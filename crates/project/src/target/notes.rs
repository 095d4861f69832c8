//! What a projection onto another machine assumes, what it falls back to, and what it cannot
//! model: said with every projection, so that no default stands in silently.

use super::framework::FrameworkPart;
use super::onednn::OnednnPart;
use super::roofs::Roofs;
use super::Input;
use super::TargetProfile;

pub struct Notes {
    pub assumptions: Vec<String>,
    pub not_modelled: Vec<String>,
    pub emulated: Vec<String>,
    /// Defaults standing in for missing figures: each widens the band.
    pub stand_ins: usize,
}

impl Notes {
    pub fn of(
        input: &Input,
        target: &TargetProfile,
        src: &Roofs,
        tgt: &Roofs,
        one: &OnednnPart,
        fw: Option<&FrameworkPart>,
        rest_note: String,
    ) -> Notes {
        let mut assumptions = vec![
            "each oneDNN primitive keeps its efficiency against its roofs: logged steady time × \
             (roofline time on the target / roofline time on the source); the source roof is \
             the unit its implementation names, the target roof the unit oneDNN would pick \
             there for its precision; memory-bound primitives move with the bandwidth"
                .to_string(),
            format!("source roofs: {}", src.note),
            format!("target roofs: {}", tgt.note),
            format!("the rest of the step: {rest_note}"),
        ];
        if fw.is_some() {
            assumptions.push(
                "framework ops outside oneDNN (BLAS, ATen) keep their efficiency against their \
                 cost-model bound, as the primitives do"
                    .into(),
            );
        }
        if let Some(i) = input.join.and_then(|j| j.warm_up) {
            assumptions.push(format!(
                "the steady step: the trace's iteration {i} (the first: primitive creation, \
                 first-touch page faults) is left out of every per-iteration figure, as \
                 warm-up does not move with the roofs"
            ));
        }
        let mut stand_ins: Vec<String> = target.defaults.clone();
        for s in one
            .stand_ins
            .iter()
            .chain(fw.iter().flat_map(|f| &f.stand_ins))
        {
            if !stand_ins.contains(s) {
                stand_ins.push(s.clone());
            }
        }
        assumptions.extend(stand_ins.iter().cloned());
        let mut emulated: Vec<String> = Vec::new();
        let mut em = one.emulated.clone();
        for (p, ms) in fw.iter().flat_map(|f| &f.emulated) {
            *em.entry(p.clone()).or_default() += ms;
        }
        for (p, ms) in &em {
            emulated.push(format!(
                "{p}: {} has no {p} unit; oneDNN falls back to converting to f32 (emulated), \
                 projected at its f32 roof ({ms:.3} ms per iteration of compute-bound {p} work)",
                target.profile.name
            ));
        }
        let memory = [src, tgt].iter().filter(|r| r.memory_stand_in).count();
        let stand_in_count = stand_ins.len() + emulated.len() + memory;
        Notes {
            assumptions,
            not_modelled: not_modelled(input, one),
            emulated,
            stand_ins: stand_in_count,
        }
    }
}

fn not_modelled(input: &Input, one: &OnednnPart) -> Vec<String> {
    let mut n = vec![
        "a unit's utilization on the target: small or skinny GEMMs reach a smaller share of \
         AMX's peak than of an FMA peak, so a move onto AMX is optimistic for them"
            .to_string(),
        "cache sizes: a working set that fits one machine's last-level cache and not the \
         other's is moved at the DRAM roofs"
            .to_string(),
        "thread scaling beyond the roofs (OpenMP barriers, per-thread work under a few µs, \
         SMT siblings)"
            .to_string(),
        "another oneDNN version or implementation choice on the target (the ISA table only \
         decides the unit)"
            .to_string(),
    ];
    if input.join.is_none() {
        n.push(
            "framework ops without a trace: the time outside oneDNN moves as a whole with \
             single-thread speed (pass --torch-trace to cost them)"
                .into(),
        );
    }
    if one.uncosted_ms > 0.0 {
        n.push(format!(
            "{:.3} ms per iteration of primitives without a cost ({}): moved by the costed \
             primitives' ratio",
            one.uncosted_ms,
            one.uncosted_reasons.join("; ")
        ));
    }
    n
}
