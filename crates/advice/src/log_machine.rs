//! The core count of the machine the log ran on, when that is this machine: the rules'
//! knowledge of that machine, which `advise` and `report` both give them.
//!
//! `thread-oversubscription` needs the cores of the log's machine. A newcomer who recorded and
//! advised on the same machine was asked for `--cores`, which the tool can read itself there.
//! The log names no CPU, only the ISA oneDNN ran with; a log whose ISA units are this machine's
//! and whose threads fit its hardware threads is taken to have run here.
//!
//! A machine profile's threads are the log's machine's cores on the same terms: a measured
//! profile whose units differ from the log's, or whose hardware threads the log's threads
//! exceed, is of another machine (the saved profile of the machine running the tool, with a log
//! recorded elsewhere, once made "56 threads on 2 cores: oversubscribed"). A profile written by
//! hand (no measured ISA) is the user's word for the machine.

use crate::Evidence;
use profilednn_analysis::log_machine::same_units;
use profilednn_analysis::RunMetadata;
use profilednn_machine::{cpu, MachineProfile};

/// What the rules know of the machine the log ran on, from the options, the machine profile and
/// this machine: `advise` and `report` (and so `record`) alike.
pub struct LogMachine {
    cores: Option<usize>,
    cores_from: Option<&'static str>,
    /// Without `cores`: why the machine profile's or this machine's count is not the log's.
    cores_unknown: Option<&'static str>,
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
        let (cores, cores_from, cores_unknown) = match cores(given_cores, machine, meta) {
            Ok((c, from)) => (Some(c), Some(from), None),
            Err(why) => (None, None, why),
        };
        let of = |v: Option<u64>| v.and_then(|x| usize::try_from(x).ok());
        LogMachine {
            cores,
            cores_from,
            cores_unknown,
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
        torch: Option<&'a profilednn_torchtrace::TorchJoin>,
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
            .with_cores_unknown(self.cores_unknown)
    }
}

/// The cores of the log's machine and where the count came from: `given` (`--cores`), else the
/// machine profile's hardware threads when it is of the log's machine, else this machine's when
/// the log looks recorded here. `Err`: why neither count is the log's machine's (`None`: there
/// was nothing to go by).
pub fn cores(
    given: Option<usize>,
    profile: Option<&MachineProfile>,
    meta: &RunMetadata,
) -> Result<(usize, &'static str), Option<&'static str>> {
    if let Some(c) = given {
        return Ok((c, "--cores"));
    }
    let of_profile = profile.and_then(|m| profile_cores(meta, &m.isa, m.threads?));
    if let Some(Ok(c)) = of_profile {
        return Ok((c, "the machine profile's threads"));
    }
    let here = cores_if_recorded_here(meta).map(|c| {
        (
            c,
            "this machine's, whose ISA the log's is: pass --cores N if it ran elsewhere",
        )
    });
    here.map_err(|why| of_profile.and_then(Result::err).or(why))
}

/// The threads of a machine profile with kernels `isa` when it is of the log's machine, else why
/// not (see the module doc).
fn profile_cores(
    meta: &RunMetadata,
    isa: &[String],
    threads: usize,
) -> Option<Result<usize, &'static str>> {
    if isa.is_empty() {
        return Some(Ok(threads));
    }
    Some(match same_units(meta, isa) {
        None => Err(
            "the log names no ISA (`isa:` header), so whether it ran on the machine profile's \
             machine is unknown: pass --cores N of the machine it ran on",
        ),
        Some(false) => Err(
            "the log ran on another machine than the machine profile's (their ISA units \
             differ): pass --cores N of the machine it ran on",
        ),
        Some(true) if meta.threads.is_some_and(|n| n as usize > threads) => Err(
            "the log has more threads than the machine profile's machine has hardware threads: \
             it ran on a larger machine (or oversubscribed this one): pass --cores N of the \
             machine it ran on",
        ),
        Some(true) => Ok(threads),
    })
}

/// This machine's hardware threads, when the log looks recorded here (see the module doc), else
/// why it is not (`None`: the log names no ISA).
pub fn cores_if_recorded_here(meta: &RunMetadata) -> Result<usize, Option<&'static str>> {
    let isa: Vec<String> = cpu::isas().iter().map(|s| s.to_string()).collect();
    cores_if_same(meta, &isa, cpu::threads())
}

/// [`cores_if_recorded_here`] for a machine with kernels `isa` and `threads` hardware threads.
fn cores_if_same(
    meta: &RunMetadata,
    isa: &[String],
    threads: usize,
) -> Result<usize, Option<&'static str>> {
    match same_units(meta, isa) {
        None => Err(None),
        Some(false) => Err(Some(
            "the log ran on another machine than this one (its ISA units are not this \
             machine's): pass --cores N of the machine it ran on",
        )),
        Some(true) if meta.threads.is_some_and(|n| n as usize > threads) => Err(Some(
            "the log has more threads than this machine has hardware threads: it ran on a \
             larger machine (or oversubscribed this one): pass --cores N of the machine it ran on",
        )),
        Some(true) => Ok(threads),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVX512_BF16: &str = "Intel AVX-512 with Intel DL Boost and bfloat16 support";
    const AMX: &str = "Intel AVX10.1 and Intel AMX with bfloat16 and 8-bit integer support";

    fn zen4() -> Vec<String> {
        ["sse", "avx2", "avx512", "avx512_bf16"]
            .map(String::from)
            .to_vec()
    }

    fn meta(isa: Option<&str>, nthr: Option<u32>) -> RunMetadata {
        RunMetadata {
            isa: isa.into_iter().map(String::from).collect(),
            threads: nthr,
            ..Default::default()
        }
    }

    #[test]
    fn a_log_with_this_machines_units_takes_its_cores() {
        let here = meta(Some(AVX512_BF16), Some(2));
        assert_eq!(cores_if_same(&here, &zen4(), 2), Ok(2));
        // More threads than this machine has: it ran elsewhere.
        let wide = meta(Some(AVX512_BF16), Some(56));
        let why = cores_if_same(&wide, &zen4(), 2).unwrap_err().unwrap();
        assert!(why.contains("more threads than this machine"), "{why}");
        // An AMX log: another machine; a log without an ISA line: nothing to go by.
        let why = cores_if_same(&meta(Some(AMX), Some(2)), &zen4(), 2)
            .unwrap_err()
            .unwrap();
        assert!(why.contains("another machine than this one"), "{why}");
        assert_eq!(cores_if_same(&meta(None, Some(2)), &zen4(), 2), Err(None));
    }

    /// Issue 51 item 7: a log of 56 threads from an AMX machine, with the saved profile of a
    /// 2-thread AVX-512 machine, read "56 threads on 2 cores: oversubscribed". A measured
    /// profile's threads count only for a log of its machine; a hand-written one (no ISA) is
    /// taken at its word.
    #[test]
    fn a_machine_profile_counts_only_for_a_log_of_its_machine() {
        let amx56 = meta(Some(AMX), Some(56));
        let why = profile_cores(&amx56, &zen4(), 2).unwrap().unwrap_err();
        assert!(
            why.contains("another machine than the machine profile's"),
            "{why}"
        );
        let wide = meta(Some(AVX512_BF16), Some(56));
        let why = profile_cores(&wide, &zen4(), 2).unwrap().unwrap_err();
        assert!(
            why.contains("more threads than the machine profile's"),
            "{why}"
        );
        let why = profile_cores(&meta(None, Some(2)), &zen4(), 2)
            .unwrap()
            .unwrap_err();
        assert!(why.contains("names no ISA"), "{why}");
        let fits = meta(Some(AVX512_BF16), Some(2));
        assert_eq!(profile_cores(&fits, &zen4(), 8), Some(Ok(8)));
        assert_eq!(profile_cores(&amx56, &[], 2), Some(Ok(2)));
        // --cores always counts.
        assert_eq!(cores(Some(4), None, &amx56), Ok((4, "--cores")));
    }
}
