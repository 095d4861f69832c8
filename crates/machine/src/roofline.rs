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

impl MachineProfile {
    /// `None` when the profile has no peak for `precision`.
    pub fn roofline(&self, precision: &str, flops: u64, bytes: u64) -> Option<Roofline> {
        let peak = self.peak_for(precision)? * 1e9;
        let bw = self.memory_gbps * 1e9;
        let t_compute = flops as f64 / peak;
        let t_memory = bytes as f64 / bw;
        let intensity = if bytes == 0 {
            f64::INFINITY
        } else {
            flops as f64 / bytes as f64
        };
        Some(Roofline {
            attainable_gflops: (peak.min(intensity * bw)) / 1e9,
            min_seconds: t_compute.max(t_memory),
            bound: if t_compute >= t_memory {
                Bound::Compute
            } else {
                Bound::Memory
            },
        })
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
}
