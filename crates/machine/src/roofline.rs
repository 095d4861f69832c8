//! The roofline: the fastest a kernel of given work and traffic can run on a machine.

use crate::MachineProfile;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Compute,
    Memory,
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
    /// Why another precision's peak is used; `None` when the precision has its own.
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
}
