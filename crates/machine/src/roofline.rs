//! The roofline: the fastest a kernel of given work and traffic can run on a machine.

use crate::MachineProfile;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Compute,
    Memory,
}

impl Bound {
    /// The name the JSON documents use (`compute`, `memory`): one spelling, not Debug text.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Compute => "compute",
            Bound::Memory => "memory",
        }
    }
}

/// The roofline of one primitive execution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    /// Attainable GFLOP/s at this intensity: `min(peak, intensity × bandwidth)`.
    pub attainable_gflops: f64,
    /// The shortest time the work and traffic allow, seconds:
    /// `max(flops / peak, bytes / bandwidth)`.
    pub min_seconds: f64,
    pub bound: Bound,
}

/// A precision the machine profile has no applicable peak for: its primitives stay uncosted.
/// The message is the uncosted reason the report prints, so it says what is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the machine profile has no {precision} peak")]
pub struct NoPeak {
    pub precision: String,
}

/// The compute ceiling that bounds a precision on a machine, and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeakChoice {
    /// The precision whose peak is used (`f32` for bf16 on a CPU without bf16 units).
    pub peak_precision: String,
    pub gflops: f64,
    /// The unit whose peak it is (`amx`, `avx512_bf16`, `avx512`, …), when the implementation
    /// named it and the profile measured it; `None` for the precision's best peak.
    pub unit: Option<String>,
    /// Why another precision's or unit's peak is used; `None` when the precision (and the
    /// implementation's unit) has its own.
    pub substitution: Option<String>,
}

impl MachineProfile {
    /// The peak that bounds `precision`: its own, or — for bf16 and f16, which oneDNN runs on a
    /// CPU without bf16/f16 units by converting to f32 (`jit_bf16:avx512_core`,
    /// `brg*:avx512_core`) — the f32 peak, with the reason. Any other precision without a peak
    /// has no applicable ceiling: the error says so and the caller leaves it uncosted.
    pub fn peak_choice(&self, precision: &str) -> Result<PeakChoice, NoPeak> {
        if let Some(gflops) = self.peak_for(precision) {
            return Ok(PeakChoice {
                peak_precision: precision.to_string(),
                gflops,
                unit: None,
                substitution: None,
            });
        }
        match (precision, self.peak_for("f32")) {
            ("bf16" | "f16", Some(gflops)) => {
                let why = if self.isa.is_empty() {
                    format!("the machine profile gives no {precision} peak")
                } else {
                    format!(
                        "this CPU has no {precision} units (measured ISAs: {})",
                        self.isa.join(", ")
                    )
                };
                Ok(PeakChoice {
                    peak_precision: "f32".to_string(),
                    gflops,
                    unit: None,
                    substitution: Some(format!(
                        "{precision} bounded by the f32 peak: {why}; oneDNN converts {precision} to f32 there"
                    )),
                })
            }
            _ => Err(NoPeak {
                precision: precision.to_string(),
            }),
        }
    }

    /// The peak that bounds `precision` as run by `implementation` (oneDNN's name for it): the
    /// peak of the unit the name says it ran on ([`crate::unit::of_implementation`]), so that
    /// `…_amx` is set against AMX and `avx512_core_bf16` against the dot product. A name that
    /// names no unit, or a unit the profile did not measure, falls back to
    /// [`MachineProfile::peak_choice`]; the latter says which roof stood in.
    pub fn peak_choice_for(
        &self,
        precision: &str,
        implementation: Option<&str>,
    ) -> Result<PeakChoice, NoPeak> {
        let Some((unit, unit_precision)) =
            implementation.and_then(|i| crate::unit::of_implementation(i, precision))
        else {
            return self.peak_choice(precision);
        };
        if let Some(gflops) = self.unit_peak(unit_precision, unit) {
            let substitution = (unit_precision != precision).then(|| {
                format!(
                    "{precision} on {unit} bounded by the f32 {unit} peak: that unit has no \
                     {precision} arithmetic; oneDNN converts {precision} to f32 there"
                )
            });
            return Ok(PeakChoice {
                peak_precision: unit_precision.to_string(),
                gflops,
                unit: Some(unit.to_string()),
                substitution,
            });
        }
        let mut fallback = self.peak_choice(precision)?;
        if self.has_unit_peaks() {
            let stood_in = fallback
                .substitution
                .take()
                .unwrap_or_else(|| format!("its best {} peak", fallback.peak_precision));
            fallback.substitution = Some(format!(
                "{precision} ran on {unit} ({}), which the machine profile did not measure: \
                 bounded by {stood_in}; re-measure with `profilednn peak` on that machine",
                implementation.unwrap_or_default()
            ));
        }
        Ok(fallback)
    }

    /// The all-core peak of `unit` in `precision`: from `unit_gflops`, else the measurements.
    pub fn unit_peak(&self, precision: &str, unit: &str) -> Option<f64> {
        if let Some(g) = self.unit_gflops.get(precision).and_then(|u| u.get(unit)) {
            return Some(*g);
        }
        self.compute
            .iter()
            .filter(|c| c.precision == precision && c.isa == unit)
            .map(|c| c.all_core_gflops)
            .reduce(f64::max)
    }

    /// Every unit peak, `precision → unit → GFLOP/s`: `unit_gflops` over the measurements.
    pub fn unit_table(
        &self,
    ) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, f64>> {
        let mut t = self.unit_gflops.clone();
        for c in &self.compute {
            let e = t
                .entry(c.precision.clone())
                .or_default()
                .entry(c.isa.clone())
                .or_insert(0.0f64);
            *e = e.max(c.all_core_gflops);
        }
        t
    }

    /// Whether the profile says which unit each peak is of (a measured profile, or a spec
    /// sheet with `unit_gflops`): only then is a missing unit a substitution worth naming.
    fn has_unit_peaks(&self) -> bool {
        !self.unit_gflops.is_empty() || !self.compute.is_empty()
    }

    /// The roofline at `peak_gflops`; see [`MachineProfile::peak_choice`] for which peak.
    pub fn roofline_at(&self, peak_gflops: f64, flops: u64, bytes: u64) -> Roofline {
        let peak = peak_gflops * 1e9;
        let bw = self.memory_gbps * 1e9;
        let t_compute = flops as f64 / peak;
        let t_memory = bytes as f64 / bw;
        let intensity = if bytes == 0 {
            f64::INFINITY
        } else {
            flops as f64 / bytes as f64
        };
        Roofline {
            attainable_gflops: (peak.min(intensity * bw)) / 1e9,
            min_seconds: t_compute.max(t_memory),
            bound: if t_compute >= t_memory {
                Bound::Compute
            } else {
                Bound::Memory
            },
        }
    }

    /// `None` when the profile has no peak of its own for `precision`.
    pub fn roofline(&self, precision: &str, flops: u64, bytes: u64) -> Option<Roofline> {
        Some(self.roofline_at(self.peak_for(precision)?, flops, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ridge_point_separates_the_bounds() {
        let m: MachineProfile =
            serde_json::from_str(r#"{"name":"t","peak_gflops":{"f32":100},"memory_gbps":10}"#)
                .unwrap();
        // Ridge at 10 flop/byte. Below it: memory bound, time = bytes / 10 GB/s.
        let r = m.roofline("f32", 1_000_000_000, 1_000_000_000).unwrap();
        assert_eq!(r.bound, Bound::Memory);
        assert!((r.min_seconds - 0.1).abs() < 1e-12);
        assert!((r.attainable_gflops - 10.0).abs() < 1e-9);
        // Above it: compute bound, time = flops / 100 GFLOP/s.
        let r = m.roofline("f32", 100_000_000_000, 1_000_000_000).unwrap();
        assert_eq!(r.bound, Bound::Compute);
        assert!((r.min_seconds - 1.0).abs() < 1e-12);
        assert!(m.roofline("bf16", 1, 1).is_none());
    }

    #[test]
    fn bf16_without_its_own_peak_is_bounded_by_f32_and_int8_is_not() {
        let spec: MachineProfile =
            serde_json::from_str(r#"{"name":"t","peak_gflops":{"f32":100},"memory_gbps":10}"#)
                .unwrap();
        let c = spec.peak_choice("bf16").unwrap();
        assert_eq!((c.peak_precision.as_str(), c.gflops), ("f32", 100.0));
        assert!(c.substitution.unwrap().contains("no bf16 peak"));
        assert_eq!(
            spec.peak_choice("int8").unwrap_err().to_string(),
            "the machine profile has no int8 peak"
        );
        let mut measured = spec.clone();
        measured.isa = vec!["sse".into(), "avx2".into(), "avx512".into()];
        let why = measured.peak_choice("bf16").unwrap().substitution.unwrap();
        assert!(why.contains("this CPU has no bf16 units"), "{why}");
        measured.peak_gflops.insert("bf16".into(), 400.0);
        let own = measured.peak_choice("bf16").unwrap();
        assert_eq!((own.gflops, own.substitution), (400.0, None));
    }

    fn compute(precision: &str, isa: &str, all_core: f64) -> crate::ComputePeak {
        crate::ComputePeak {
            precision: precision.into(),
            isa: isa.into(),
            per_core_gflops: all_core / 2.0,
            all_core_gflops: all_core,
            theoretical_per_core_gflops: None,
            method: String::new(),
            runs: 1,
        }
    }

    #[test]
    fn the_implementation_picks_the_units_roof() {
        // A Xeon with AMX measured by `peak`: f32 FMA 468, bf16 dot product 228, AMX 2,000.
        let mut m: MachineProfile = serde_json::from_str(
            r#"{"name":"amx","peak_gflops":{"f32":468,"bf16":2000},"memory_gbps":53}"#,
        )
        .unwrap();
        m.compute = vec![
            compute("f32", "avx2", 234.0),
            compute("f32", "avx512", 468.0),
            compute("bf16", "avx512_bf16", 228.0),
            compute("bf16", "amx", 2000.0),
        ];
        let amx = m
            .peak_choice_for("bf16", Some("brg_conv_bwd_d:avx512_core_amx"))
            .unwrap();
        assert_eq!(
            (amx.gflops, amx.unit.as_deref(), amx.substitution),
            (2000.0, Some("amx"), None)
        );
        let dot = m
            .peak_choice_for("bf16", Some("jit:avx512_core_bf16"))
            .unwrap();
        assert_eq!(
            (dot.gflops, dot.unit.as_deref()),
            (228.0, Some("avx512_bf16"))
        );
        let avx2 = m.peak_choice_for("f32", Some("jit:avx2")).unwrap();
        assert_eq!(avx2.gflops, 234.0);
        // bf16 on plain AVX-512: the f32 FMA roof, said.
        let emu = m
            .peak_choice_for("bf16", Some("jit_bf16:avx512_core"))
            .unwrap();
        assert_eq!((emu.gflops, emu.peak_precision.as_str()), (468.0, "f32"));
        assert!(emu.substitution.unwrap().contains("converts bf16 to f32"));
        // A name without a unit: the precision's best peak, no note.
        let vague = m.peak_choice_for("bf16", Some("ref:any")).unwrap();
        assert_eq!((vague.gflops, vague.substitution), (2000.0, None));
        // An AMX log against a profile without AMX (a v1 profile: dot product only): the
        // roof that stood in is named.
        m.compute.pop();
        m.peak_gflops.insert("bf16".into(), 228.0);
        let sub = m
            .peak_choice_for("bf16", Some("brg_matmul:avx10_1_512_amx"))
            .unwrap();
        assert_eq!(sub.gflops, 228.0);
        let why = sub.substitution.unwrap();
        assert!(why.contains("bf16 ran on amx (brg_matmul:avx10_1_512_amx), which the machine profile did not measure: bounded by its best bf16 peak"), "{why}");
        // A spec sheet's short profile names no units: its bf16 figure stands, silently.
        let spec: MachineProfile = serde_json::from_str(
            r#"{"name":"s","peak_gflops":{"f32":7168,"bf16":229376},"memory_gbps":614}"#,
        )
        .unwrap();
        let s = spec
            .peak_choice_for("bf16", Some("brg_conv_fwd:avx512_core_amx"))
            .unwrap();
        assert_eq!((s.gflops, s.substitution), (229376.0, None));
    }
}
