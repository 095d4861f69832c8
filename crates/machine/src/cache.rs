//! The last-level cache's size, and the working set that measures DRAM rather than it.
//!
//! A bandwidth figure is a DRAM figure only when the set streams from DRAM: a 64 MiB set on a
//! CPU with a 300 MiB L3 (Xeon family 6 model 207, 2 vCPUs) stayed in the cache and `peak
//! --quick` saved 95 GB/s as the DRAM roof, where 512 MiB gave 53.6 GB/s. So the largest set is
//! chosen from the cache's size, and a set that cannot exceed it is said not to be DRAM.

use std::path::Path;

/// How many times the last-level cache the DRAM set spans. Twice the cache already defeats
/// LRU, but the L3s of recent Xeons are non-inclusive with adaptive replacement that keeps part
/// of a streamed set; at 4× at most a quarter of the set can still hit the cache.
pub const DRAM_SET_PER_LLC: u64 = 4;

/// The size in bytes of the largest cache that `cpu0` lists under
/// `/sys/devices/system/cpu/cpu0/cache/index*/size` (Data or Unified), `None` where the kernel
/// does not list one.
pub fn last_level_bytes() -> Option<u64> {
    last_level_bytes_in(Path::new("/sys/devices/system/cpu/cpu0/cache"))
}

fn last_level_bytes_in(dir: &Path) -> Option<u64> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter(|e| {
            let kind = std::fs::read_to_string(e.path().join("type")).unwrap_or_default();
            kind.trim() != "Instruction"
        })
        .filter_map(|e| parse_size(&std::fs::read_to_string(e.path().join("size")).ok()?))
        .max()
}

/// sysfs writes sizes as `48K`, `2048K`, `307200K` (KiB), occasionally `M` or plain bytes.
fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits.parse().ok()?;
    match unit.trim() {
        "" => Some(n),
        "K" | "KiB" => Some(n << 10),
        "M" | "MiB" => Some(n << 20),
        "G" | "GiB" => Some(n << 30),
        _ => None,
    }
}

/// Bytes of memory this process may still allocate (`MemAvailable` of /proc/meminfo).
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// The largest working set of the bandwidth sweep, and whether it measures DRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DramSet {
    pub bytes: u64,
    /// The last-level cache it was chosen against (`None`: unknown).
    pub llc_bytes: Option<u64>,
    /// The set exceeds the last-level cache, so its figure is a DRAM figure. False when the
    /// cache size is unknown, or memory would not hold a set larger than the cache.
    pub is_dram: bool,
}

/// The sweep's largest set: at least `floor` (the effort's own choice), at least
/// [`DRAM_SET_PER_LLC`] × the last-level cache, rounded up to a MiB, and at most half the
/// available memory (the sweep allocates the whole set at once, beside the rest of the
/// process). `is_dram` only when the chosen set is larger than the cache.
pub fn dram_set(floor: u64, llc: Option<u64>, available: Option<u64>) -> DramSet {
    let wanted = llc.map_or(floor, |c| floor.max(DRAM_SET_PER_LLC * c));
    let wanted = wanted.div_ceil(1 << 20) << 20;
    let cap = available.map_or(u64::MAX, |a| (a / 2) >> 20 << 20);
    let bytes = wanted.min(cap).max(1 << 20);
    DramSet {
        bytes,
        llc_bytes: llc,
        is_dram: llc.is_some_and(|c| bytes > c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_dram_set_spans_four_last_level_caches() {
        // This machine's case: a 300 MiB L3 makes --quick's 64 MiB set 1200 MiB, the standard
        // 512 MiB one too.
        let s = dram_set(64 * MIB, Some(300 * MIB), Some(20 << 30));
        assert_eq!(s.bytes, 1200 * MIB);
        assert!(s.is_dram);
        assert_eq!(dram_set(512 * MIB, Some(300 * MIB), None).bytes, 1200 * MIB);
        // A desktop's 32 MiB L3: the effort's own 512 MiB is already beyond 4 × 32 MiB.
        let s = dram_set(512 * MIB, Some(32 * MIB), Some(16 << 30));
        assert_eq!((s.bytes, s.is_dram), (512 * MIB, true));
        // An odd cache size is rounded up to whole MiB: 4 × 1.5 MiB + 1 KiB.
        let s = dram_set(MIB, Some(3 * MIB / 2 + 256), None);
        assert_eq!(s.bytes, 7 * MIB);
    }

    #[test]
    fn a_set_that_cannot_exceed_the_cache_is_not_dram() {
        // 300 MiB L3, 500 MiB free: half of it (250 MiB) is the most the sweep allocates.
        let s = dram_set(64 * MIB, Some(300 * MIB), Some(500 * MIB));
        assert_eq!(s.bytes, 250 * MIB);
        assert!(!s.is_dram);
        // Unknown cache: the effort's set, not claimed as DRAM.
        let s = dram_set(64 * MIB, None, Some(20 << 30));
        assert_eq!((s.bytes, s.is_dram), (64 * MIB, false));
    }

    #[test]
    fn sysfs_sizes_are_read_and_instruction_caches_skipped() {
        assert_eq!(parse_size("307200K\n"), Some(300 * MIB));
        assert_eq!(parse_size("2M"), Some(2 * MIB));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("lots"), None);
        let dir = std::env::temp_dir().join(format!("pdnn-cache-{}", std::process::id()));
        for (i, kind, size) in [
            (0, "Data", "48K"),
            (1, "Instruction", "999999K"),
            (2, "Unified", "2048K"),
            (3, "Unified", "307200K"),
        ] {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(last_level_bytes_in(&dir), Some(300 * MIB));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(last_level_bytes_in(&dir), None);
    }
}
