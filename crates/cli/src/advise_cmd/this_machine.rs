//! The core count of the machine the log ran on, when that is this machine.
//!
//! `thread-oversubscription` needs the cores of the log's machine. A newcomer who recorded and
//! advised on the same machine was asked for `--cores`, which the tool can read itself there.
//! The log names no CPU, only the ISA oneDNN ran with; a log whose ISA units are this machine's
//! and whose threads fit its hardware threads is taken to have run here.

use profilednn_analysis::log_machine::same_units;
use profilednn_analysis::RunMetadata;
use profilednn_machine::cpu;

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
