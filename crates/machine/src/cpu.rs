//! What the CPU says about itself: vector ISAs, AMX, model name, frequency.

/// Vector ISAs the compute kernels can use on this CPU, best last.
pub fn isas() -> Vec<&'static str> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use profilednn_isa::{Isa, Level};
        if Isa::of(Level::Avx2).is_some() {
            // The "sse" peak kernel is VEX-encoded xmm FMA: it needs the same features.
            v.push("sse");
            v.push("avx2");
        }
        if Isa::of(Level::Avx512).is_some() {
            v.push("avx512");
        }
        if profilednn_isa::avx512_bf16() {
            v.push("avx512_bf16");
        }
        if profilednn_isa::avx512_fp16() {
            v.push("avx512_fp16");
        }
        if profilednn_isa::avx512_vnni() {
            v.push("avx512_vnni");
        }
        if amx_reported() {
            v.push("amx");
        }
    }
    v
}

/// CPUID leaf 7: EDX bit 24 = AMX-TILE, bit 22 = AMX-BF16. (Rust's feature-detection macro
/// does not know AMX on stable.)
pub fn amx_reported() -> bool {
    profilednn_isa::amx_bf16()
}

fn cpuinfo_field(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

pub fn model_name() -> Option<String> {
    cpuinfo_field("model name")
}

/// Nominal frequency in GHz: the cpufreq maximum when the kernel exposes it, else the
/// current `cpu MHz` of /proc/cpuinfo (on VMs the only figure there is).
pub fn frequency_ghz() -> Option<f64> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    {
        if let Ok(khz) = s.trim().parse::<f64>() {
            return Some(khz / 1e6);
        }
    }
    cpuinfo_field("cpu MHz")
        .and_then(|m| m.parse::<f64>().ok())
        .map(|mhz| mhz / 1e3)
}

pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// CPU sockets: the distinct `physical_package_id`s under /sys/devices/system/cpu; `None` where
/// the kernel does not expose the topology (not Linux, some containers).
pub fn sockets() -> Option<u64> {
    sockets_under(std::path::Path::new("/sys/devices/system/cpu"))
}

/// [`sockets`] of a `/sys/devices/system/cpu`-like tree (`cpuN/topology/physical_package_id`).
pub fn sockets_under(root: &std::path::Path) -> Option<u64> {
    distinct_topology(root, |t| read_id(&t.join("physical_package_id")))
}

/// Physical cores: the distinct (`physical_package_id`, `core_id`) pairs under
/// /sys/devices/system/cpu, so that the SMT siblings of a core count once; `None` where the
/// kernel does not expose the topology.
pub fn physical_cores() -> Option<u64> {
    physical_cores_under(std::path::Path::new("/sys/devices/system/cpu"))
}

/// [`physical_cores`] of a `/sys/devices/system/cpu`-like tree
/// (`cpuN/topology/{physical_package_id,core_id}`).
pub fn physical_cores_under(root: &std::path::Path) -> Option<u64> {
    distinct_topology(root, |t| {
        Some((
            read_id(&t.join("physical_package_id"))?,
            read_id(&t.join("core_id"))?,
        ))
    })
}

fn read_id(p: &std::path::Path) -> Option<i64> {
    std::fs::read_to_string(p)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
}

/// How many distinct `key`s the CPUs (`cpuN`, not `cpufreq` or `cpuidle`) under `root` have,
/// given their `topology` folder; `None` when none has one.
fn distinct_topology<K: Ord>(
    root: &std::path::Path,
    key: impl Fn(&std::path::Path) -> Option<K>,
) -> Option<u64> {
    let mut ids = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(root).ok()?.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str().and_then(|n| n.strip_prefix("cpu")) else {
            continue;
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Some(k) = key(&e.path().join("topology")) {
            ids.insert(k);
        }
    }
    (!ids.is_empty()).then_some(ids.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_counted_from_a_hand_built_topology() {
        let d = std::env::temp_dir().join(format!("profilednn-topology-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        // 4 CPUs in packages 0, 0, 1, 1; `cpufreq` and `cpuidle` are not CPUs.
        for (cpu, pkg) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
            let t = d.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{pkg}\n")).unwrap();
        }
        std::fs::create_dir_all(d.join("cpufreq")).unwrap();
        assert_eq!(sockets_under(&d), Some(2));
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(sockets_under(&d), None);
    }

    #[test]
    fn physical_cores_count_smt_siblings_once() {
        let d = std::env::temp_dir().join(format!("profilednn-cores-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        // 2 packages × 2 cores × 2 hardware threads; core ids repeat across packages (as
        // Linux numbers them), so a core is a (package, core_id) pair: 4 cores, not 2 or 8.
        for (cpu, pkg, core) in [
            (0, 0, 0),
            (1, 0, 1),
            (2, 1, 0),
            (3, 1, 1),
            (4, 0, 0),
            (5, 0, 1),
            (6, 1, 0),
            (7, 1, 1),
        ] {
            let t = d.join(format!("cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("physical_package_id"), format!("{pkg}\n")).unwrap();
            std::fs::write(t.join("core_id"), format!("{core}\n")).unwrap();
        }
        assert_eq!(physical_cores_under(&d), Some(4));
        assert_eq!(sockets_under(&d), Some(2));
        std::fs::remove_dir_all(&d).unwrap();
        assert_eq!(physical_cores_under(&d), None);
    }
}
