//! The core count of the machine the log ran on, when that is this machine.
//!
//! `thread-oversubscription` needs the cores of the log's machine. A newcomer who recorded and
//! advised on the same machine was asked for `--cores`, which the tool can read itself there.
//! The log names no CPU, only the ISA oneDNN ran with; a log whose ISA units are this machine's
//! and whose threads fit its hardware threads is taken to have run here.

use profilednn_advice::Evidence;
use profilednn_analysis::log_machine::same_units;
use profilednn_analysis::RunMetadata;
use profilednn_machine::{cpu, MachineProfile};

/// What the rules know of the machine the log ran on, from the options, the machine profile and
/// this machine: `advise` and `report` (and so `record`) alike.
pub struct LogMachine {
    cores: Option<usize>,
    cores_from: Option<&'static str>,
    sockets: Option<usize>,
    physical_cores: Option<usize>,
}

impl LogMachine {
    /// `given_cores`/`given_sockets`: `advise --cores/--sockets` (none for `report`). A given
    /// core count is also the physical one; else the profile's `physical_cores` (not its
    /// hardware threads, which count each SMT sibling) decide whether a rank spans sockets.
    pub fn new(
        given_cores: Option<usize>,
        given_sockets: Option<usize>,
        machine: Option<&MachineProfile>,
        meta: &RunMetadata,
    ) -> LogMachine {
        let (cores, cores_from) = cores(given_cores, machine.and_then(|m| m.threads), meta);
        let of = |v: Option<u64>| v.and_then(|x| usize::try_from(x).ok());
        LogMachine {
            cores,
            cores_from,
            sockets: given_sockets.or(of(machine.and_then(|m| m.sockets))),
            physical_cores: given_cores.or(of(machine.and_then(|m| m.physical_cores))),
        }
    }

    pub fn cores(&self) -> Option<usize> {
        self.cores
    }

    /// The evidence of `profiles` (merged into `merged`, summarised as `summary`) on this
    /// machine, with each rank log's node: what `advise` and `report` both judge.
    pub fn evidence<'a>(
        &self,
        profiles: &[profilednn_analysis::Profile],
        merged: &'a profilednn_analysis::Profile,
        summary: &'a profilednn_analysis::Summary,
        torch: Option<&'a profilednn_analysis::torch_trace::TorchJoin>,
        nodes: &'a [(String, String)],
    ) -> Evidence<'a> {
        self.apply(Evidence::from_profiles(
            profiles,
            merged,
            summary,
            self.cores(),
            torch,
        ))
        .with_nodes(nodes)
    }

    /// `evidence` with the sockets, physical cores and where the core count came from.
    pub fn apply<'a>(&self, evidence: Evidence<'a>) -> Evidence<'a> {
        evidence
            .with_sockets(self.sockets)
            .with_physical_cores(self.physical_cores)
            .with_cores_from(self.cores_from)
    }
}

/// The cores of the log's machine and where the count came from: `given` (`--cores`), else the
/// machine profile's hardware threads, else this machine's when the log looks recorded here.
pub fn cores(
    given: Option<usize>,
    profile: Option<usize>,
    meta: &RunMetadata,
) -> (Option<usize>, Option<&'static str>) {
    if given.is_some() {
        return (given, Some("--cores"));
    }
    if profile.is_some() {
        return (profile, Some("the machine profile's threads"));
    }
    match cores_if_recorded_here(meta) {
        Some(c) => (
            Some(c),
            Some("this machine's, whose ISA the log's is: pass --cores N if it ran elsewhere"),
        ),
        None => (None, None),
    }
}

/// This machine's hardware threads, when the log looks recorded here (see the module doc).
pub fn cores_if_recorded_here(meta: &RunMetadata) -> Option<usize> {
    let isa: Vec<String> = cpu::isas().iter().map(|s| s.to_string()).collect();
    cores_if_same(meta, &isa, cpu::threads())
}

/// [`cores_if_recorded_here`] for a machine with kernels `isa` and `threads` hardware threads.
fn cores_if_same(meta: &RunMetadata, isa: &[String], threads: usize) -> Option<usize> {
    let fits = meta.threads.is_none_or(|n| n as usize <= threads);
    (same_units(meta, isa)? && fits).then_some(threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_with_this_machines_units_takes_its_cores() {
        let zen4: Vec<String> = ["sse", "avx2", "avx512", "avx512_bf16"]
            .map(String::from)
            .to_vec();
        let meta = |isa: &str, nthr: Option<u32>| RunMetadata {
            isa: vec![isa.to_string()],
            threads: nthr,
            ..Default::default()
        };
        let here = meta(
            "Intel AVX-512 with Intel DL Boost and bfloat16 support",
            Some(2),
        );
        assert_eq!(cores_if_same(&here, &zen4, 2), Some(2));
        // More threads than this machine has: it ran elsewhere.
        let wide = meta(
            "Intel AVX-512 with Intel DL Boost and bfloat16 support",
            Some(56),
        );
        assert_eq!(cores_if_same(&wide, &zen4, 2), None);
        // An AMX log, and a log without an ISA line: not known to be from here.
        let amx = meta(
            "Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support",
            Some(2),
        );
        assert_eq!(cores_if_same(&amx, &zen4, 2), None);
        assert_eq!(cores_if_same(&RunMetadata::default(), &zen4, 2), None);
    }
}
