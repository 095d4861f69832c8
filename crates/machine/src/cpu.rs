//! What the CPU says about itself: vector ISAs, AMX, model name, frequency.

/// Vector ISAs the compute kernels can use on this CPU, best last.
pub fn isas() -> Vec<&'static str> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("sse2") {
            v.push("sse");
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            v.push("avx2");
        }
        if is_x86_feature_detected!("avx512f") {
            v.push("avx512");
        }
        if is_x86_feature_detected!("avx512bf16") {
            v.push("avx512_bf16");
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
    #[cfg(target_arch = "x86_64")]
    {
        let max = std::arch::x86_64::__cpuid(0).eax;
        if max < 7 {
            return false;
        }
        let r = std::arch::x86_64::__cpuid_count(7, 0);
        r.edx & (1 << 24) != 0 && r.edx & (1 << 22) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
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
