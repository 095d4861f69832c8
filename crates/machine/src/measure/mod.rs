//! Measuring this machine: compute peaks per ISA and a memory-bandwidth sweep.
//!
//! Every kernel has a runtime-dispatched SIMD body per ISA, so the same binary measures every
//! ISA the CPU has. Each figure is the best of several runs (a peak is what the hardware
//! *can* do; noise only ever slows a run down) and says how it was obtained.

pub mod amx;
pub mod bandwidth;
pub mod flops;

use crate::cache::{self, DramSet};
use crate::{cpu, BandwidthPoint, ComputePeak, MachineProfile, SCHEMA};
use std::collections::BTreeMap;

/// How long to measure.
#[derive(Debug, Clone, Copy)]
pub struct Effort {
    /// FMA-loop iterations per thread and run.
    pub flop_iters: u64,
    pub runs: u32,
    /// Largest working set of the bandwidth sweep: [`Effort::dram`]'s bytes.
    pub max_working_set: u64,
    /// The DRAM set as chosen against this machine's last-level cache.
    pub dram: DramSet,
    /// Bytes each bandwidth run moves at least (small sets are repeated).
    pub bytes_per_run: u64,
    pub threads: usize,
}

impl Effort {
    pub fn standard(threads: usize) -> Effort {
        let dram = this_machines_dram_set(512 << 20);
        Effort {
            flop_iters: 20_000_000,
            runs: 5,
            max_working_set: dram.bytes,
            dram,
            bytes_per_run: 1 << 30,
            threads,
        }
    }
    /// A few seconds: for tests and a first look. Its largest set still exceeds the last-level
    /// cache (a smaller one measured the cache, not DRAM).
    pub fn quick(threads: usize) -> Effort {
        let dram = this_machines_dram_set(64 << 20);
        Effort {
            flop_iters: 2_000_000,
            runs: 2,
            max_working_set: dram.bytes,
            dram,
            bytes_per_run: 64 << 20,
            threads,
        }
    }
}

fn this_machines_dram_set(floor: u64) -> DramSet {
    cache::dram_set(floor, cache::last_level_bytes(), cache::available_bytes())
}

/// What the profile says about its largest set: DRAM, or why it may not be.
fn dram_note(d: &DramSet) -> String {
    let mib = |b: u64| b >> 20;
    match d.llc_bytes {
        Some(c) if d.is_dram => format!(
            "memory bandwidth measured on a {} MiB set, beyond the {} MiB last-level cache (≥ {}x it when memory allows): a DRAM figure",
            mib(d.bytes), mib(c), cache::DRAM_SET_PER_LLC
        ),
        Some(c) => format!(
            "memory bandwidth measured on a {} MiB set, within the {} MiB last-level cache (not enough free memory for a larger one): an in-cache figure, not DRAM",
            mib(d.bytes), mib(c)
        ),
        None => format!(
            "last-level cache size unknown (no /sys/devices/system/cpu/cpu0/cache): the {} MiB set may not reach DRAM",
            mib(d.bytes)
        ),
    }
}

/// What the profile must say about AMX: not reported, or reported but not granted (the rest is
/// measured all the same). Measured AMX needs no note: its compute rows say how.
fn amx_note() -> Option<String> {
    amx_note_for(cpu::amx_reported(), amx::permission())
}

fn amx_note_for(reported: bool, granted: Result<(), String>) -> Option<String> {
    if !reported {
        return Some(
            "AMX not measured: the CPU does not report AMX-TILE/AMX-BF16 (CPUID leaf 7)".into(),
        );
    }
    granted
        .err()
        .map(|why| format!("AMX is reported by CPUID but not measured: {why}"))
}

/// Measures everything and returns the profile. `progress` receives a line per step.
pub fn measure(effort: Effort, progress: &mut dyn FnMut(&str)) -> MachineProfile {
    let isas = cpu::isas();
    let ghz = cpu::frequency_ghz();
    let mut compute = Vec::new();
    let mut notes = Vec::new();
    for kernel in flops::kernels() {
        if !kernel.available() {
            continue;
        }
        progress(&format!("compute: {} {}", kernel.precision, kernel.isa));
        let per_core = flops::run(&kernel, effort.flop_iters, effort.runs, 1);
        if let Some(g) = ghz {
            let (lo, hi) = kernel.envelope(g);
            if !(lo..=hi).contains(&per_core) {
                notes.push(format!(
                    "{} {} per-core {per_core:.1} GFLOP/s is outside the plausible {lo:.0}–{hi:.0} for {g:.2} GHz: treat it with suspicion",
                    kernel.precision, kernel.isa
                ));
            } else if per_core > kernel.theoretical_per_core(g, kernel.units) {
                notes.push(format!(
                    "{} {} runs above the {}-unit theory at the reported {g:.2} GHz: the core turbos above that frequency",
                    kernel.precision, kernel.isa, kernel.units
                ));
            }
        }
        let all_core = flops::run(&kernel, effort.flop_iters, effort.runs, effort.threads);
        compute.push(ComputePeak {
            precision: kernel.precision.to_string(),
            isa: kernel.isa.to_string(),
            per_core_gflops: per_core,
            all_core_gflops: all_core,
            theoretical_per_core_gflops: ghz.map(|g| kernel.theoretical_per_core(g, kernel.units)),
            method: format!(
                "{} of {} ({} flops each) per loop iteration, {} iterations per thread, best of {} runs; all-core = {} threads",
                if kernel.isa == "amx" {
                    format!("{} tile products on 4 accumulator tiles", kernel.chains)
                } else {
                    format!("{} independent accumulator chains", kernel.chains)
                },
                kernel.instruction, kernel.flops_per_instruction,
                effort.flop_iters, effort.runs, effort.threads
            ),
            runs: effort.runs,
        });
    }
    notes.extend(amx_note());
    if ghz.is_none() {
        notes.push("frequency unknown: no theoretical peaks".into());
    }
    notes.push(dram_note(&effort.dram));
    let mut bw = Vec::new();
    for ws in bandwidth::sweep_sizes(effort.max_working_set) {
        for kernel in bandwidth::Kernel::ALL {
            progress(&format!(
                "bandwidth: {} {} KiB, 1 thread",
                kernel.name(),
                ws >> 10
            ));
            bw.push(bandwidth::run(
                kernel,
                ws,
                1,
                effort.bytes_per_run,
                effort.runs.min(3),
            ));
        }
    }
    for kernel in bandwidth::Kernel::ALL {
        progress(&format!(
            "bandwidth: {} {} MiB, {} threads",
            kernel.name(),
            effort.max_working_set >> 20,
            effort.threads
        ));
        bw.push(bandwidth::run(
            kernel,
            effort.max_working_set,
            effort.threads,
            effort.bytes_per_run,
            effort.runs.min(3),
        ));
    }
    let mut peak_gflops = BTreeMap::new();
    let mut unit_gflops: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for c in &compute {
        let e = peak_gflops.entry(c.precision.clone()).or_insert(0.0f64);
        *e = e.max(c.all_core_gflops);
        let u = unit_gflops.entry(c.precision.clone()).or_default();
        let e = u.entry(c.isa.clone()).or_insert(0.0f64);
        *e = e.max(c.all_core_gflops);
    }
    let memory_gbps = bw
        .iter()
        .filter(|p: &&BandwidthPoint| {
            p.working_set_bytes == effort.max_working_set && p.threads == effort.threads
        })
        .map(|p| p.gbps)
        .fold(0.0, f64::max);
    MachineProfile {
        schema: SCHEMA.to_string(),
        name: cpu::model_name().unwrap_or_else(|| "this machine".into()),
        peak_gflops,
        unit_gflops,
        memory_gbps,
        cpu: cpu::model_name(),
        threads: Some(effort.threads),
        sockets: cpu::sockets(),
        physical_cores: cpu::physical_cores(),
        last_level_cache_bytes: effort.dram.llc_bytes,
        isa: isas.iter().map(|s| s.to_string()).collect(),
        compute,
        bandwidth: bw,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::amx_note_for;

    #[test]
    fn amx_reported_but_not_granted_is_said_and_the_rest_measured() {
        // An old kernel, or a container whose seccomp profile blocks arch_prctl.
        let refused = Err("the kernel refused the AMX tile state (arch_prctl: EPERM)".to_string());
        let note = amx_note_for(true, refused).unwrap();
        assert_eq!(
            note,
            "AMX is reported by CPUID but not measured: the kernel refused the AMX tile state (arch_prctl: EPERM)"
        );
        assert!(amx_note_for(false, Ok(()))
            .unwrap()
            .contains("does not report AMX"));
        assert_eq!(amx_note_for(true, Ok(())), None);
    }
}
