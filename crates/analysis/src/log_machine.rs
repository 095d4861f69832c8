//! Whether a log ran on a machine with the machine profile's units, for the roofline's note on
//! which machine it describes.
//!
//! A roofline against a profile of another machine projects the log there, and the report says
//! so. Said of a profile measured on the very machine the log ran on, the same sentence misled a
//! newcomer. The log names no CPU model, only the ISA oneDNN dispatched to (its `isa:` header);
//! the profile lists the kernels `peak` could run (`avx512`, `avx512_bf16`, `amx`). The units
//! both describe — vector width, bf16 dot products, AMX — are compared; a difference is another
//! machine, or a oneDNN limited with `ONEDNN_MAX_CPU_ISA`.

use crate::metadata::RunMetadata;
use profilednn_machine::MachineProfile;
use profilednn_model::cpu_units::Units;

/// The units a profile's measured ISA list shows, `None` for a profile without one (written by
/// hand from a spec sheet).
fn profile_units(isa: &[String]) -> Option<Units> {
    let has = |n: &str| isa.iter().any(|i| i == n);
    (!isa.is_empty()).then(|| Units {
        f32_vector_bits: if has("avx512") {
            512
        } else if has("avx2") {
            256
        } else {
            128
        },
        bf16_dot: has("avx512_bf16"),
        amx_bf16: has("amx"),
        ..Units::default()
    })
}

/// The units that decide a roof: width, bf16 dot products, AMX tiles.
fn roof_units(u: &Units) -> (u16, bool, bool) {
    (u.f32_vector_bits, u.bf16_dot, u.amx_bf16)
}

/// Whether the log's `isa:` units are those of a machine whose measured kernels are `isa`
/// (`MachineProfile::isa`, `profilednn_machine::cpu::isas()` for this one): `None` when either
/// side does not say.
pub fn same_units(meta: &RunMetadata, isa: &[String]) -> Option<bool> {
    let log = meta.cpu_units()?.units()?;
    Some(roof_units(&log) == roof_units(&profile_units(isa)?))
}

/// The roofline's line about the log's machine, `None` when the log has no `isa:` line.
pub fn note(meta: &RunMetadata, m: &MachineProfile) -> Option<String> {
    if meta.isa.is_empty() {
        return None;
    }
    let isa = meta.isa.join("; ");
    let log = meta.cpu_units().and_then(|u| u.units());
    Some(match (log, profile_units(&m.isa)) {
        (Some(l), Some(p)) if roof_units(&l) == roof_units(&p) => format!(
            "the log ran on: {isa}, the units of the profile's machine ({}): the roofs are those \
             of the machine it ran on",
            p.describe()
        ),
        (Some(l), Some(p)) => format!(
            "the log ran on: {isa} ({}), not the profile's machine ({}): the roofline projects \
             the log to that machine (or oneDNN was limited with ONEDNN_MAX_CPU_ISA)",
            l.describe(),
            p.describe()
        ),
        _ => format!(
            "the log ran on: {isa} (whether the profile is of that machine is unknown: a profile \
             of another machine projects the log to that machine)"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(isa: &str) -> RunMetadata {
        RunMetadata {
            isa: vec![isa.to_string()],
            ..Default::default()
        }
    }

    fn machine(isa: &[&str]) -> MachineProfile {
        let mut m: MachineProfile =
            serde_json::from_str(r#"{"name":"m","peak_gflops":{"f32":1},"memory_gbps":1}"#)
                .unwrap();
        m.isa = isa.iter().map(|s| s.to_string()).collect();
        m
    }

    #[test]
    fn a_log_from_the_profiles_machine_is_not_called_another() {
        // This Zen 4: AVX-512 with AVX512-BF16, no AMX, as peak lists it and oneDNN 3.2 names it.
        let zen4 = machine(&["sse", "avx2", "avx512", "avx512_bf16"]);
        let log = meta("Intel AVX-512 with Intel DL Boost and bfloat16 support");
        let n = note(&log, &zen4).unwrap();
        assert!(n.contains("the units of the profile's machine"), "{n}");
        assert!(!n.contains("another machine"), "{n}");
        // A Sapphire Rapids log (AMX) against it: another machine.
        let spr = meta("Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support");
        let n = note(&spr, &zen4).unwrap();
        assert!(n.contains("not the profile's machine"), "{n}");
        // An AVX2 machine's profile against the Zen 4 log: another machine too.
        assert!(note(&log, &machine(&["sse", "avx2"]))
            .unwrap()
            .contains("not the profile's"));
        // A hand-written profile lists no ISA: unknown, said as such.
        assert!(note(&log, &machine(&[])).unwrap().contains("is unknown"));
        assert_eq!(note(&RunMetadata::default(), &zen4), None);
    }
}
