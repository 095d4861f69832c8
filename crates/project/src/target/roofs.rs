//! The roofs one primitive or op meets on a machine, at a number of threads per rank.
//!
//! Why two rules: on the machine the log ran on, the unit is known — the implementation name
//! says it (`…_amx`, `avx512_core_bf16`, `jit_bf16:avx512_core`) — so its roof is that unit's
//! ([`MachineProfile::peak_choice_for`]). On the target it is not: the unit is the one oneDNN
//! would dispatch to there for that precision (bf16: AMX tiles when the CPU has them, else the
//! AVX512-BF16 dot product, else f32 FMA after conversion — "emulated").

use profilednn_machine::MachineProfile;
use serde::Serialize;

/// A compute roof: all-core GFLOP/s at the chosen threads, the unit, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Roof {
    pub gflops: f64,
    /// `amx`, `avx512_bf16`, `avx512`, `avx2`, … or `best` when the profile names no unit.
    pub unit: String,
    /// The precision runs on f32 units after conversion (no unit of its own).
    pub emulated: bool,
    /// A roof that stood in for one the profile lacks (said in the projection, widens the band).
    pub stand_in: Option<String>,
}

/// A machine's roofs at `threads` threads per rank.
pub struct Roofs<'m> {
    pub machine: &'m MachineProfile,
    /// Compute peaks are all-core figures over `machine.threads`: this is `threads / all`
    /// (1 when the profile does not say its threads, or the rank has them all).
    pub compute_factor: f64,
    pub memory_gbps: f64,
    /// What was scaled and how, for the assumptions.
    pub note: String,
    /// The memory roof's stand-in (no bandwidth measured at these threads): widens the band.
    pub memory_stand_in: bool,
}

/// What one server core draws from memory when a profile has no bandwidth at the rank's
/// threads: the middle of the 10-20 GB/s measured on the CPUs this project met
/// (../shared/docs/other-machines.md; the 2-vCPU guests of the library drew 35-46 GB/s on 2).
pub const PER_CORE_DRAW_GBPS: f64 = 15.0;

/// The memory roof of `threads` threads of a machine whose all-thread bandwidth is `all_gbps`
/// and of which they are `share`: that share, but at least [`PER_CORE_DRAW_GBPS`] per thread,
/// and never above the whole machine's.
pub fn stand_in_memory_gbps(all_gbps: f64, share: f64, threads: usize) -> f64 {
    (all_gbps * share)
        .max(threads as f64 * PER_CORE_DRAW_GBPS)
        .min(all_gbps)
}

impl<'m> Roofs<'m> {
    /// `machine`'s roofs for a rank of `threads` threads (`scaled_to_threads` for memory; the
    /// unit peaks scaled by the same share of the threads).
    pub fn at(machine: &'m MachineProfile, threads: usize) -> Roofs<'m> {
        match machine.scaled_to_threads(threads) {
            Some((scaled, note)) => {
                let share = threads as f64 / machine.threads.unwrap_or(threads) as f64;
                let swept = machine.bandwidth.iter().any(|b| b.threads == threads);
                // Without a bandwidth at these threads, the all-core figure is far above what
                // a few cores draw, and the share of the threads far below it on a big socket
                // (2 of 56 cores' share of 358 GB/s is 12.8, where a 2-vCPU guest of that CPU
                // measured 35): the share, but never below what that many cores draw.
                let (memory_gbps, note) = if swept {
                    (scaled.memory_gbps, note)
                } else {
                    let gbps = stand_in_memory_gbps(machine.memory_gbps, share, threads);
                    (
                        gbps,
                        format!(
                            "{note}; memory roof {gbps:.1} GB/s instead: the share of the \
                             threads, at least {PER_CORE_DRAW_GBPS:.0} GB/s a core (a stand-in \
                             for a bandwidth measured at {threads} threads)"
                        ),
                    )
                };
                Roofs {
                    machine,
                    compute_factor: share,
                    memory_gbps,
                    note: format!("{}: {note}", machine.name),
                    memory_stand_in: !swept,
                }
            }
            None => Roofs {
                machine,
                compute_factor: 1.0,
                memory_gbps: machine.memory_gbps,
                memory_stand_in: false,
                note: match machine.threads {
                    Some(all) => format!(
                        "{}: all-core roofs ({all} threads; the rank has {threads})",
                        machine.name
                    ),
                    None => format!(
                        "{}: roofs as written (the profile does not say for how many threads: \
                         taken as the rank's {threads})",
                        machine.name
                    ),
                },
            },
        }
    }

    /// The roof of `precision` as the log's `implementation` ran it on this (the source) machine.
    pub fn source(&self, precision: &str, implementation: &str) -> Option<Roof> {
        let c = self
            .machine
            .peak_choice_for(precision, Some(implementation))
            .ok()?;
        Some(Roof {
            gflops: c.gflops * self.compute_factor,
            unit: c.unit.unwrap_or_else(|| "best".into()),
            emulated: c.peak_precision != precision,
            stand_in: c.substitution.filter(|_| c.peak_precision == precision),
        })
    }

    /// The roof of `precision` on this (the target) machine, for the unit oneDNN would pick.
    pub fn target(&self, precision: &str) -> Option<Roof> {
        let m = self.machine;
        let has_isa = |i: &str| m.isa.iter().any(|x| x == i);
        let unit = |p: &str, u: &str| m.unit_peak(p, u).map(|g| g * self.compute_factor);
        let given = |p: &str| m.peak_for(p).map(|g| g * self.compute_factor);
        // `gflops` already at the rank's threads.
        let roof = |gflops: f64, unit: &str, emulated: bool, stand_in: Option<String>| Roof {
            gflops,
            unit: unit.into(),
            emulated,
            stand_in,
        };
        match precision {
            "bf16" | "f16" => {
                let dot = if precision == "bf16" {
                    "avx512_bf16"
                } else {
                    "avx512_fp16"
                };
                if let Some(g) = unit(precision, "amx") {
                    return Some(roof(g, "amx", false, None));
                }
                // `amx` in the ISA list is AMX-BF16 (and INT8): f16 tiles (AMX-FP16) come with
                // Granite Rapids, so a missing f16 AMX figure is no stand-in elsewhere.
                if has_isa("amx") && precision == "bf16" {
                    if let Some(g) = unit(precision, dot) {
                        return Some(roof(
                            g,
                            dot,
                            false,
                            Some(format!(
                                "the target has AMX but its profile has no {precision} AMX \
                                 figure: the {dot} dot-product roof stands in (a lower roof: \
                                 the projection is pessimistic there)"
                            )),
                        ));
                    }
                }
                if let Some(g) = unit(precision, dot) {
                    return Some(roof(g, dot, false, None));
                }
                if let Some(g) = given(precision) {
                    // A spec sheet's figure: the unit its ISA list names, if any.
                    let u = if has_isa("amx") && precision == "bf16" {
                        "amx"
                    } else if has_isa(dot) {
                        dot
                    } else {
                        "best"
                    };
                    return Some(roof(g, u, false, None));
                }
                let f = self.target("f32")?;
                Some(Roof {
                    emulated: true,
                    stand_in: Some(format!(
                        "the target has no {precision} unit: oneDNN converts {precision} to f32 \
                         there (emulated), so its f32 roof ({}) bounds it",
                        f.unit
                    )),
                    ..f
                })
            }
            // int8: the tiles, else VNNI, as oneDNN picks them.
            "int8" => ["amx", "avx512_vnni"]
                .into_iter()
                .find_map(|u| unit(precision, u).map(|g| roof(g, u, false, None)))
                .or_else(|| given(precision).map(|g| roof(g, "best", false, None))),
            _ => {
                for u in ["avx512", "avx2", "sse"] {
                    if let Some(g) = unit(precision, u) {
                        return Some(roof(g, u, false, None));
                    }
                }
                // A spec sheet's figure: the widest FMA its ISA list names, if any (else an
                // `avx512` log would read as a change of unit where there is none).
                let named = ["avx512", "avx2", "sse"].into_iter().find(|u| has_isa(u));
                given(precision).map(|g| roof(g, named.unwrap_or("best"), false, None))
            }
        }
    }

    /// One core's f32 peak: the fastest f32 unit's per-core figure, else the all-core figure
    /// over the threads. A proxy for single-thread speed (Python, dispatch).
    pub fn single_core_f32(&self) -> Option<(f64, &'static str)> {
        let measured = self
            .machine
            .compute
            .iter()
            .filter(|c| c.precision == "f32" && c.per_core_gflops > 0.0)
            .map(|c| c.per_core_gflops)
            .reduce(f64::max);
        if let Some(g) = measured {
            return Some((g, "measured one-core f32 peak"));
        }
        let all = self.machine.peak_for("f32")?;
        let t = self.machine.threads?;
        Some((all / t.max(1) as f64, "all-core f32 peak / threads"))
    }

    /// The shortest time of `flops` operations at `roof` and `bytes` at this memory roof, ms.
    pub fn time_ms(&self, roof: &Roof, flops: u64, bytes: u64) -> (f64, bool) {
        let compute = flops as f64 / (roof.gflops * 1e6);
        let memory = bytes as f64 / (self.memory_gbps * 1e6);
        (compute.max(memory), memory > compute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(json: &str) -> MachineProfile {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn bf16_goes_to_amx_then_the_dot_product_then_emulation() {
        let amx = machine(
            r#"{"name":"spr","peak_gflops":{"f32":400,"bf16":4000},"memory_gbps":50,"threads":2,
               "isa":["avx512","avx512_bf16","amx"],
               "unit_gflops":{"bf16":{"amx":4000,"avx512_bf16":200},"f32":{"avx512":400}}}"#,
        );
        let r = Roofs::at(&amx, 2).target("bf16").unwrap();
        assert_eq!(
            (r.gflops, r.unit.as_str(), r.emulated),
            (4000.0, "amx", false)
        );
        // One thread of two: half of every roof.
        assert_eq!(Roofs::at(&amx, 1).target("bf16").unwrap().gflops, 2000.0);
        let zen = machine(
            r#"{"name":"zen4","peak_gflops":{"f32":230,"bf16":461},"memory_gbps":46,"threads":2,
               "isa":["avx512","avx512_bf16"],
               "unit_gflops":{"bf16":{"avx512_bf16":461},"f32":{"avx512":230}}}"#,
        );
        let r = Roofs::at(&zen, 2).target("bf16").unwrap();
        assert_eq!((r.gflops, r.unit.as_str()), (461.0, "avx512_bf16"));
        let icx = machine(
            r#"{"name":"icx","peak_gflops":{"f32":300},"memory_gbps":40,"threads":2,
               "isa":["avx512","avx512_vnni"],"unit_gflops":{"f32":{"avx512":300}}}"#,
        );
        let r = Roofs::at(&icx, 2).target("bf16").unwrap();
        assert_eq!(
            (r.gflops, r.unit.as_str(), r.emulated),
            (300.0, "avx512", true)
        );
        assert!(r.stand_in.unwrap().contains("emulated"));
        // AMX listed but not measured: the dot product stands in, said.
        let unmeasured = machine(
            r#"{"name":"x167","peak_gflops":{"f32":468,"bf16":228},"memory_gbps":53,"threads":2,
               "isa":["avx512","avx512_bf16","amx"],
               "unit_gflops":{"bf16":{"avx512_bf16":228},"f32":{"avx512":468}}}"#,
        );
        let r = Roofs::at(&unmeasured, 2).target("bf16").unwrap();
        assert_eq!(r.gflops, 228.0);
        assert!(r
            .stand_in
            .unwrap()
            .contains("has AMX but its profile has no bf16 AMX"));
    }

    #[test]
    fn the_source_roof_is_the_unit_the_implementation_names() {
        let amx = machine(
            r#"{"name":"spr","peak_gflops":{"f32":400,"bf16":4000},"memory_gbps":50,"threads":2,
               "unit_gflops":{"bf16":{"amx":4000,"avx512_bf16":200},"f32":{"avx512":400}}}"#,
        );
        let r = Roofs::at(&amx, 2);
        assert_eq!(
            r.source("bf16", "jit:avx512_core_bf16").unwrap().gflops,
            200.0
        );
        assert_eq!(
            r.source("bf16", "brg_matmul:avx10_1_512_amx")
                .unwrap()
                .gflops,
            4000.0
        );
        let e = r.source("bf16", "jit_bf16:avx512_core").unwrap();
        assert_eq!((e.gflops, e.emulated), (400.0, true));
        // 1 GFLOP over 1 GB at 200 GFLOP/s and 50 GB/s: 20 ms memory-bound.
        let (ms, memory) = r.time_ms(
            &r.source("bf16", "jit:avx512_core_bf16").unwrap(),
            1_000_000_000,
            1_000_000_000,
        );
        assert!((ms - 20.0).abs() < 1e-9 && memory);
    }

    /// Two threads of a 56-core socket's 358.4 GB/s: its share is 12.8 GB/s, below two cores'
    /// draw (2 × 15 = 30); two of a 2-thread guest's 35 GB/s keep them all; one of its threads
    /// gets its share, 17.5 (above 15).
    #[test]
    fn a_few_threads_of_a_big_socket_draw_what_cores_draw() {
        let socket = machine(
            r#"{"name":"emr","peak_gflops":{"f32":7526.4},"memory_gbps":358.4,"threads":56}"#,
        );
        let r = Roofs::at(&socket, 2);
        assert!((r.memory_gbps - 30.0).abs() < 1e-9, "{}", r.memory_gbps);
        assert!(r.memory_stand_in);
        assert!((stand_in_memory_gbps(35.0, 1.0, 2) - 35.0).abs() < 1e-9);
        assert!((stand_in_memory_gbps(35.0, 0.5, 1) - 17.5).abs() < 1e-9);
        assert!((stand_in_memory_gbps(20.0, 0.5, 4) - 20.0).abs() < 1e-9);
    }
}
