//! The machine profile file (`profilednn.machine.v2`; v1 still reads).
//!
//! v2 (issue 52) measures every matrix and dot-product unit (AMX, AVX512-FP16, VNNI) and adds
//! `unit_gflops`: a v1 `peak_gflops.bf16` was the AVX512-BF16 dot product's even on a CPU with
//! AMX, a v2 one is the fastest unit's. A v1 profile reads as it was written.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "profilednn.machine.v2";
/// The first schema: no AMX measurement, no `unit_gflops`. Still read.
pub const SCHEMA_V1: &str = "profilednn.machine.v1";

/// A machine's ceilings. Only `peak_gflops` and `memory_gbps` are needed for a roofline, so a
/// profile written by hand from a spec sheet can be this short (the peaks of
/// `fixtures/machine/xeon-8480-spec.json`, whose notes derive them):
///
/// ```
/// # use profilednn_machine::MachineProfile;
/// let short: MachineProfile = serde_json::from_str(
///     r#"{ "name": "2S Xeon 8480+ (spec)", "peak_gflops": { "f32": 7168, "bf16": 229376 },
///          "memory_gbps": 614 }"#,
/// ).unwrap();
/// # let fixture: MachineProfile = serde_json::from_str(include_str!(
/// #     "../../../fixtures/machine/xeon-8480-spec.json")).unwrap();
/// # assert_eq!(short.peak_gflops["f32"], fixture.peak_gflops["f32"]);
/// # assert_eq!(short.peak_gflops["bf16"], fixture.peak_gflops["bf16"]);
/// # assert_eq!(short.memory_gbps, fixture.memory_gbps);
/// assert_eq!(short.memory_gbps, 614.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineProfile {
    #[serde(default = "schema")]
    pub schema: String,
    pub name: String,
    /// All-core peak per arithmetic precision (`f32`, `bf16`, `f16`, `int8`), GFLOP/s: the
    /// fastest unit's (AMX where it was measured, from schema v2 on).
    pub peak_gflops: BTreeMap<String, f64>,
    /// All-core peak per precision and unit (`{"bf16": {"amx": …, "avx512_bf16": …}}`): the
    /// roof of a primitive whose implementation names its unit
    /// ([`MachineProfile::peak_choice_for`]). Written by `peak` from schema v2 on; a spec sheet
    /// may give it; older profiles derive it from `compute`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unit_gflops: BTreeMap<String, BTreeMap<String, f64>>,
    /// All-core memory bandwidth the roofline uses (DRAM working set), GB/s.
    pub memory_gbps: f64,
    #[serde(default)]
    pub cpu: Option<String>,
    /// Hardware threads used for the all-core figures.
    #[serde(default)]
    pub threads: Option<usize>,
    /// CPU sockets (distinct `physical_package_id`s), when measured: where ranks must not span
    /// (`plan`, the `rank-thread-placement` advice). Absent in profiles older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sockets: Option<u64>,
    /// Physical cores (distinct core × package pairs under /sys; SMT siblings counted once),
    /// when measured: a rank spans sockets by its physical cores, not by `threads`. Absent in
    /// profiles older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_cores: Option<u64>,
    /// The last-level cache `peak` measured against (bytes): a `memory_gbps` whose set did not
    /// exceed it is an in-cache figure (see [`MachineProfile::suspicions`]). Absent in profiles
    /// older than the field, written by hand, or where /sys lists no cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_level_cache_bytes: Option<u64>,
    #[serde(default)]
    pub isa: Vec<String>,
    /// Every compute measurement, with its method.
    #[serde(default)]
    pub compute: Vec<ComputePeak>,
    /// The bandwidth sweep (kernel × working set × threads).
    #[serde(default)]
    pub bandwidth: Vec<BandwidthPoint>,
    /// What could not be measured and why (e.g. AMX not granted by the OS).
    #[serde(default)]
    pub notes: Vec<String>,
}

fn schema() -> String {
    SCHEMA.to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputePeak {
    /// `f32`, `bf16`, …
    pub precision: String,
    /// Instruction set the kernel used: `sse`, `avx2`, `avx512`, `avx512_bf16`, `amx`.
    pub isa: String,
    pub per_core_gflops: f64,
    pub all_core_gflops: f64,
    /// Theoretical peak at the reported frequency, when the frequency is known.
    #[serde(default)]
    pub theoretical_per_core_gflops: Option<f64>,
    pub method: String,
    pub runs: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthPoint {
    /// `read`, `copy` or `triad`.
    pub kernel: String,
    /// Bytes of all arrays the kernel touches.
    pub working_set_bytes: u64,
    pub threads: usize,
    /// Best-of-runs bandwidth, counting every byte read and written once.
    pub gbps: f64,
    pub runs: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read machine profile {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("machine profile {path} is not valid: {source} (expected JSON with \"name\", \"peak_gflops\" {{\"f32\": GFLOP/s, …}} and \"memory_gbps\"; `profilednn peak -o FILE` writes one)")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("machine profile {path}: {what}")]
    Invalid { path: String, what: InvalidProfile },
}

/// What makes a profile that parses unusable for a roofline. Each message names the field to
/// correct; `profilednn peak -o FILE` writes a profile with all of them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidProfile {
    #[error("schema '{0}' is neither '{SCHEMA}' nor '{SCHEMA_V1}'")]
    Schema(String),
    #[error("memory_gbps must be a positive number")]
    MemoryBandwidth,
    #[error("peak_gflops needs at least an \"f32\" entry")]
    NoF32Peak,
    #[error("peak_gflops.{0} must be a positive number")]
    Peak(String),
}

impl MachineProfile {
    pub fn load(path: &Path) -> Result<MachineProfile, ProfileError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: p.clone(),
            source,
        })?;
        MachineProfile::from_json(&text, &p)
    }

    /// A profile from its JSON text, validated (`path` names it in errors).
    pub fn from_json(text: &str, path: &str) -> Result<MachineProfile, ProfileError> {
        let prof: MachineProfile =
            serde_json::from_str(text).map_err(|source| ProfileError::Json {
                path: path.to_string(),
                source,
            })?;
        prof.validate().map_err(|what| ProfileError::Invalid {
            path: path.to_string(),
            what,
        })?;
        Ok(prof)
    }

    pub fn validate(&self) -> Result<(), InvalidProfile> {
        if self.schema != SCHEMA && self.schema != SCHEMA_V1 {
            return Err(InvalidProfile::Schema(self.schema.clone()));
        }
        if self.memory_gbps.is_nan() || self.memory_gbps <= 0.0 {
            return Err(InvalidProfile::MemoryBandwidth);
        }
        if !self.peak_gflops.contains_key("f32") {
            return Err(InvalidProfile::NoF32Peak);
        }
        for (k, v) in &self.peak_gflops {
            if v.is_nan() || *v <= 0.0 {
                return Err(InvalidProfile::Peak(k.clone()));
            }
        }
        Ok(())
    }

    /// Why this profile's roofs may be wrong; empty when nothing looks off. An all-core peak
    /// that scales poorly over the one-core peak means the all-core run shared its cores (other
    /// processes, a busy host) or lost frequency under load: its roof is too low, and primitives
    /// then "exceed" it. A newcomer's bf16 figure on 2 busy vCPUs scaled 1.09×, which the old
    /// "not above one core" test let through. See [`crate::scaling`].
    pub fn suspicions(&self) -> Vec<String> {
        let mut out: Vec<String> = self.in_cache_memory_roof().into_iter().collect();
        let Some(threads) = self.threads.filter(|t| *t > 1) else {
            return out;
        };
        let threads_txt = format!(" with {threads} threads");
        for c in &self.compute {
            if c.per_core_gflops <= 0.0 {
                continue;
            }
            let ratio = c.all_core_gflops / c.per_core_gflops;
            let expected = crate::scaling::expected(threads, self.physical_cores);
            if expected > 1 && ratio <= 1.05 {
                out.push(format!(
                    "{} ({}): the all-core peak {:.1} GFLOP/s is not above the one-core peak \
                     {:.1} GFLOP/s{threads_txt}: the all-core measurement did not scale (a busy \
                     machine, other processes on the cores, or a frequency drop under load), so \
                     this roof is too low; re-run `profilednn peak` on an idle machine",
                    c.precision, c.isa, c.all_core_gflops, c.per_core_gflops,
                ));
            } else if crate::scaling::poor(ratio, expected) {
                out.push(format!(
                    "{} ({}): the all-core peak {:.1} GFLOP/s is only {ratio:.2}x the one-core \
                     peak {:.1} GFLOP/s{threads_txt} on {} physical core(s), where about \
                     {expected}x is expected: the all-core measurement shared its cores (a busy \
                     machine) or lost frequency under load, so this roof is too low; re-run \
                     `profilednn peak` on an idle machine",
                    c.precision,
                    c.isa,
                    c.all_core_gflops,
                    c.per_core_gflops,
                    self.physical_cores
                        .map_or_else(|| "unknown".to_string(), |p| p.to_string()),
                ));
            }
        }
        out
    }

    /// `memory_gbps` measured on sets that all fit in the last-level cache is not a DRAM roof:
    /// `peak --quick` once saved 95 GB/s from a 64 MiB set inside a 300 MiB L3 (DRAM: 53.6).
    fn in_cache_memory_roof(&self) -> Option<String> {
        let llc = self.last_level_cache_bytes?;
        let largest = self.bandwidth.iter().map(|b| b.working_set_bytes).max()?;
        (largest <= llc).then(|| {
            format!(
                "memory {:.1} GB/s was measured on at most {} MiB, inside the {} MiB last-level \
                 cache: an in-cache figure, not DRAM bandwidth; re-run `profilednn peak` with \
                 more free memory",
                self.memory_gbps,
                largest >> 20,
                llc >> 20
            )
        })
    }

    /// The profile's roofs for a run of `threads` threads: the compute peaks scaled by
    /// `threads / self.threads` (a spec sheet of a 112-core machine against a 2-thread log),
    /// and the memory roof from the bandwidth sweep at that thread count when it has one.
    /// Returns the scaled profile and what was done; `None` when there is nothing to scale.
    pub fn scaled_to_threads(&self, threads: usize) -> Option<(MachineProfile, String)> {
        let all = self.threads?;
        if threads == 0 || threads >= all {
            return None;
        }
        let f = threads as f64 / all as f64;
        let mut m = self.clone();
        for v in m.peak_gflops.values_mut() {
            *v *= f;
        }
        // The unit roofs too: a primitive is bounded by its unit's peak
        // (`peak_choice_for`), which must be at the log's threads like the rest. They go into
        // `unit_gflops` (read before `compute`); the measurements themselves stay as measured,
        // or their all-core against one-core check (`suspicions`) would see a peak that "did
        // not scale" in every profile scaled down.
        m.unit_gflops = self.unit_table();
        for v in m.unit_gflops.values_mut().flat_map(|u| u.values_mut()) {
            *v *= f;
        }
        let largest = self
            .bandwidth
            .iter()
            .filter(|b| b.threads == threads)
            .map(|b| b.working_set_bytes)
            .max();
        let memory = match largest {
            Some(ws) => {
                m.memory_gbps = self
                    .bandwidth
                    .iter()
                    .filter(|b| b.threads == threads && b.working_set_bytes == ws)
                    .map(|b| b.gbps)
                    .fold(0.0, f64::max);
                format!(
                    "memory roof {:.1} GB/s measured at {threads} threads",
                    m.memory_gbps
                )
            }
            None => format!(
                "memory roof not scaled ({:.1} GB/s for all {all} threads: the profile has no \
                 bandwidth at {threads} threads)",
                self.memory_gbps
            ),
        };
        m.name = format!("{} at {threads} of {all} threads", self.name);
        let note = format!(
            "roofs scaled to the log's {threads} threads: compute peaks × {threads}/{all}; {memory}"
        );
        Some((m, note))
    }

    /// The compute ceiling for `precision`; a precision the profile lacks is `None` (the
    /// caller says so rather than borrowing another precision's peak).
    pub fn peak_for(&self, precision: &str) -> Option<f64> {
        self.peak_gflops.get(precision).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_written_profile_needs_three_fields() {
        let p: MachineProfile = serde_json::from_str(
            r#"{"name":"spec","peak_gflops":{"f32":100,"bf16":400},"memory_gbps":20}"#,
        )
        .unwrap();
        assert!(p.validate().is_ok());
        assert_eq!(p.peak_for("bf16"), Some(400.0));
        assert_eq!(p.peak_for("int8"), None);
        let bad: MachineProfile =
            serde_json::from_str(r#"{"name":"x","peak_gflops":{"bf16":1},"memory_gbps":0}"#)
                .unwrap();
        assert_eq!(bad.validate(), Err(InvalidProfile::MemoryBandwidth));
        let e = MachineProfile::from_json(
            r#"{"name":"x","peak_gflops":{"bf16":1},"memory_gbps":5}"#,
            "m.json",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"machine profile m.json: peak_gflops needs at least an "f32" entry"#
        );
    }

    fn measured(threads: usize, cores: Option<u64>, one: f64, all: f64) -> MachineProfile {
        let mut p: MachineProfile = serde_json::from_str(
            r#"{"name":"m","peak_gflops":{"bf16":1,"f32":1},"memory_gbps":1}"#,
        )
        .unwrap();
        p.threads = Some(threads);
        p.physical_cores = cores;
        p.compute.push(ComputePeak {
            precision: "bf16".into(),
            isa: "avx512_bf16".into(),
            per_core_gflops: one,
            all_core_gflops: all,
            theoretical_per_core_gflops: None,
            method: String::new(),
            runs: 1,
        });
        p
    }

    #[test]
    fn scaling_to_fewer_threads_scales_every_unit_roof() {
        // A 4-thread profile with AMX against a 1-thread log: the AMX roof a `…_amx`
        // primitive is set against must be a quarter too, like the precision's peak.
        let mut p = measured(4, Some(4), 100.0, 400.0);
        p.compute[0].isa = "amx".into();
        p.unit_gflops
            .entry("bf16".into())
            .or_default()
            .insert("avx512_bf16".into(), 200.0);
        let (one, _) = p.scaled_to_threads(1).unwrap();
        assert_eq!(one.unit_peak("bf16", "amx"), Some(100.0));
        assert_eq!(one.unit_peak("bf16", "avx512_bf16"), Some(50.0));
        let amx = one
            .peak_choice_for("bf16", Some("brg_matmul:avx10_1_512_amx"))
            .unwrap();
        assert_eq!(amx.gflops, 100.0);
        // The measurements are not rewritten: the scaled profile is no more suspect than the
        // measured one (a clean 4x over one core).
        assert!(p.suspicions().is_empty());
        assert!(one.suspicions().is_empty(), "{:?}", one.suspicions());
    }

    #[test]
    fn a_memory_roof_measured_inside_the_last_level_cache_is_suspect() {
        let mut p = measured(2, Some(2), 200.0, 390.0);
        p.memory_gbps = 95.0;
        p.bandwidth.push(BandwidthPoint {
            kernel: "read".into(),
            working_set_bytes: 64 << 20,
            threads: 2,
            gbps: 95.0,
            runs: 2,
        });
        // No cache size recorded (an older profile): nothing to judge by.
        assert!(p.suspicions().is_empty());
        p.last_level_cache_bytes = Some(300 << 20);
        let s = p.suspicions();
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(s[0].contains("memory 95.0 GB/s was measured on at most 64 MiB, inside the 300 MiB last-level cache"), "{s:?}");
        p.bandwidth[0].working_set_bytes = 1200 << 20;
        assert!(p.suspicions().is_empty());
    }

    #[test]
    fn a_bf16_figure_that_scaled_1_09x_on_two_cores_is_suspect() {
        // The newcomer's figures: 1.09x over one core, 2 threads on 2 physical cores.
        let s = measured(2, Some(2), 200.0, 218.0).suspicions();
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(
            s[0].contains("is only 1.09x the one-core peak 200.0 GFLOP/s with 2 threads on 2 physical core(s), where about 2x is expected"),
            "{s:?}"
        );
        // A clean 1.9x is not; nor 1.09x where both threads share one core (SMT siblings).
        assert!(measured(2, Some(2), 200.0, 380.0).suspicions().is_empty());
        assert!(measured(2, Some(1), 200.0, 218.0).suspicions().is_empty());
        // Not above one core at all keeps its own wording.
        assert!(measured(2, Some(2), 200.0, 200.0).suspicions()[0]
            .contains("is not above the one-core peak"));
    }
}
