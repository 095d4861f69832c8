//! Memory-bandwidth kernels (read, copy, triad, update) over a working-set sweep, and a
//! four-stream read (`read4`) that benchmarks ask for by name.
//!
//! Each run's result is checked against a checksum known in closed form, so neither the
//! compiler nor a bug can skip bytes: a kernel that did not touch every element fails loudly.

use crate::BandwidthPoint;
use profilednn_isa::{Isa, Level};
use std::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `s += a[i]`: bytes = 4n.
    Read,
    /// `b[i] = a[i]`: bytes = 8n (read + write, as STREAM counts).
    Copy,
    /// `a[i] = b[i] + 2 c[i]`: bytes = 12n.
    Triad,
    /// `x[i] = b[i] − x[i]` for x in a, c, d, in place: bytes = 28n (read four arrays, write
    /// three back where they were read: no write-allocate). The way an Adam or LAMB step uses
    /// memory (parameter, two moments updated in place beside the gradient). On an AMD EPYC
    /// Zen 4 guest (4 KiB pages, KVM) one thread's bandwidth grows with the streams in flight:
    /// AdamW's step moved 44–49 GB/s while copy and triad reached 24–34, so a bound from those
    /// alone was slower than the kernel it bounds.
    Update,
    /// `s += a[i] + b[i] + c[i] + d[i]`: bytes = 16n, four streams read side by side and
    /// nothing written. The floor of an element-wise step: no step that reads these bytes can
    /// take less time than reading them alone. One thread's reads grow with the streams in
    /// flight, so one stream (`read`) would set that floor too high: on an Intel Xeon guest
    /// (family 6 model 167, 2 vCPUs, 300 MB) one thread read 12.0 GB/s from one stream and
    /// 15.4-15.6 from three or four.
    Read4,
}

impl Kernel {
    /// The kernels `profilednn peak` sweeps (its memory peak is the best of them).
    pub const ALL: [Kernel; 4] = [Kernel::Read, Kernel::Copy, Kernel::Triad, Kernel::Update];
    /// Every kernel [`Kernel::from_name`] knows: [`Kernel::ALL`] and the floor kernel.
    const NAMED: [Kernel; 5] = [
        Kernel::Read,
        Kernel::Copy,
        Kernel::Triad,
        Kernel::Update,
        Kernel::Read4,
    ];
    pub fn name(&self) -> &'static str {
        match self {
            Kernel::Read => "read",
            Kernel::Copy => "copy",
            Kernel::Triad => "triad",
            Kernel::Update => "update",
            Kernel::Read4 => "read4",
        }
    }
    /// The kernel named `name` (`read`, `copy`, `triad`, `update`, `read4`).
    pub fn from_name(name: &str) -> Option<Kernel> {
        Kernel::NAMED.into_iter().find(|k| k.name() == name)
    }

    /// Bytes the memory system moves per byte this kernel counts (STREAM's convention, which
    /// [`run`] reports). A plain store to a line that is not in the cache first reads the line
    /// (write-allocate), so copy moves 12n bytes for the 8n it counts and triad 16n for 12n.
    /// A kernel that writes with non-temporal stores or updates its arrays in place (the focal
    /// gradient, the optimizers) moves only the bytes it reads and writes, so its bound must be
    /// set against the bytes these kernels really move, or it comes out slower than the kernel.
    /// Update reads every line it writes: it moves what it counts.
    pub fn moved_per_counted(&self) -> f64 {
        match self {
            Kernel::Read | Kernel::Update | Kernel::Read4 => 1.0,
            Kernel::Copy => 1.5,
            Kernel::Triad => 4.0 / 3.0,
        }
    }

    /// The f32 words counted per element index: each array read, and each written (update
    /// reads four and writes three of them back).
    fn counted_words(&self) -> u64 {
        match self {
            Kernel::Update => 7,
            k => k.arrays(),
        }
    }

    /// The distinct arrays (the working set is split among them).
    fn arrays(&self) -> u64 {
        match self {
            Kernel::Read => 1,
            Kernel::Copy => 2,
            Kernel::Triad => 3,
            Kernel::Update | Kernel::Read4 => 4,
        }
    }
}

/// The constant `b` of the update kernel: `8 − x` maps the pattern 0..3 to 8..5 and back,
/// exactly, so after an even number of passes each updated array is the pattern again.
const UPDATE_B: f32 = 8.0;

/// Working sets from 16 KiB (L1) by factors of 4 to `max`: enough points to show each cache
/// level's plateau and DRAM. A step within 2× of `max` is left out (with a 300 MiB L3 the DRAM
/// set is 1200 MiB, and a 1024 MiB point beside it would only double the time).
pub fn sweep_sizes(max: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = 16u64 << 10;
    while s.saturating_mul(2) <= max {
        v.push(s);
        s *= 4;
    }
    v.push(max);
    v
}

/// The fill pattern `i % 4`: sums stay exact integers in f32 for every size used here.
fn pattern(i: usize) -> f32 {
    (i % 4) as f32
}

fn pattern_sum(start: usize, n: usize) -> f64 {
    (start..start + n).map(|i| pattern(i) as f64).sum()
}

/// Sums with 64 independent lanes (vectorisable without reassociation); exact for the pattern.
#[inline(always)]
fn sum_body(a: &[f32]) -> f64 {
    let mut acc = [0.0f32; 64];
    let chunks = a.chunks_exact(64);
    let rest = chunks.remainder();
    for c in chunks {
        for (x, y) in acc.iter_mut().zip(c) {
            *x += *y;
        }
    }
    acc.iter().map(|x| *x as f64).sum::<f64>() + rest.iter().map(|x| *x as f64).sum::<f64>()
}

/// [`sum_body`] over four arrays read side by side (each element's four values added first);
/// exact for the pattern while a lane's total stays below 2^24 (each of the 64 lanes adds at most
/// 12 per 64 elements: over 89 M elements per thread, 1.4 GB of read4's working set, far beyond
/// what benchmarks ask).
#[inline(always)]
fn sum4_body(a: &[f32], b: &[f32], c: &[f32], d: &[f32]) -> f64 {
    let mut acc = [0.0f32; 64];
    let n = a.len() - a.len() % 64;
    let (b, c, d) = (&b[..a.len()], &c[..a.len()], &d[..a.len()]);
    for i in (0..n).step_by(64) {
        let (x, y, z, w) = (&a[i..i + 64], &b[i..i + 64], &c[i..i + 64], &d[i..i + 64]);
        for j in 0..64 {
            acc[j] += (x[j] + y[j]) + (z[j] + w[j]);
        }
    }
    let rest = (n..a.len()).map(|i| ((a[i] + b[i]) + (c[i] + d[i])) as f64);
    acc.iter().map(|x| *x as f64).sum::<f64>() + rest.sum::<f64>()
}

#[inline(always)]
fn update_body(a: &mut [f32], b: &[f32], c: &mut [f32], d: &mut [f32]) {
    for (((x, y), z), w) in a.iter_mut().zip(b).zip(c.iter_mut()).zip(d.iter_mut()) {
        *x = *y - *x;
        *z = *y - *z;
        *w = *y - *w;
    }
}

#[inline(always)]
fn triad_body(a: &mut [f32], b: &[f32], c: &[f32]) {
    for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
        *x = *y + 2.0 * *z;
    }
}

/// Four independent 512-bit accumulators: one load and one add per 64 bytes, no dependency
/// stall, so the loop runs at load bandwidth.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sum_avx512(a: &[f32]) -> f64 {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_setzero_ps(); 4];
    let chunks = a.chunks_exact(64);
    let rest = chunks.remainder();
    for c in chunks {
        let p = c.as_ptr();
        for (j, x) in acc.iter_mut().enumerate() {
            *x = _mm512_add_ps(*x, _mm512_loadu_ps(p.add(16 * j)));
        }
    }
    let mut lanes = [0.0f32; 64];
    for (j, x) in acc.iter().enumerate() {
        _mm512_storeu_ps(lanes.as_mut_ptr().add(16 * j), *x);
    }
    lanes.iter().map(|x| *x as f64).sum::<f64>() + rest.iter().map(|x| *x as f64).sum::<f64>()
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_avx2(a: &[f32]) -> f64 {
    sum_body(a)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sum4_avx512(a: &[f32], b: &[f32], c: &[f32], d: &[f32]) -> f64 {
    sum4_body(a, b, c, d)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum4_avx2(a: &[f32], b: &[f32], c: &[f32], d: &[f32]) -> f64 {
    sum4_body(a, b, c, d)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn triad_avx512(a: &mut [f32], b: &[f32], c: &[f32]) {
    triad_body(a, b, c)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn triad_avx2(a: &mut [f32], b: &[f32], c: &[f32]) {
    triad_body(a, b, c)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn update_avx512(a: &mut [f32], b: &[f32], c: &mut [f32], d: &mut [f32]) {
    update_body(a, b, c, d)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn update_avx2(a: &mut [f32], b: &[f32], c: &mut [f32], d: &mut [f32]) {
    update_body(a, b, c, d)
}

/// Runtime dispatch: the widest vectors the CPU has (whatever `PROFILEDNN_ISA` says: this
/// measures the machine), else portable code.
fn sum(a: &[f32]) -> f64 {
    match Isa::best().level() {
        // SAFETY: the AVX-512 level was detected (it includes avx512f, which this path needs).
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { sum_avx512(a) },
        // SAFETY: the AVX2 level was detected (avx2, fma).
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { sum_avx2(a) },
        _ => sum_body(a),
    }
}

fn sum4(a: &[f32], b: &[f32], c: &[f32], d: &[f32]) -> f64 {
    match Isa::best().level() {
        // SAFETY: the AVX-512 level was detected (it includes avx512f, which this path needs).
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { sum4_avx512(a, b, c, d) },
        // SAFETY: the AVX2 level was detected (avx2, fma).
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { sum4_avx2(a, b, c, d) },
        _ => sum4_body(a, b, c, d),
    }
}

fn triad(a: &mut [f32], b: &[f32], c: &[f32]) {
    match Isa::best().level() {
        // SAFETY: the AVX-512 level was detected (it includes avx512f, which this path needs).
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { triad_avx512(a, b, c) },
        // SAFETY: the AVX2 level was detected (avx2, fma).
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { triad_avx2(a, b, c) },
        _ => triad_body(a, b, c),
    }
}

fn update(a: &mut [f32], b: &[f32], c: &mut [f32], d: &mut [f32]) {
    match Isa::best().level() {
        // SAFETY: the AVX-512 level was detected (it includes avx512f, which this path needs).
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { update_avx512(a, b, c, d) },
        // SAFETY: the AVX2 level was detected (avx2, fma).
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { update_avx2(a, b, c, d) },
        _ => update_body(a, b, c, d),
    }
}

/// One thread's share of the arrays.
struct Part {
    start: usize,
    /// Checksum of the read kernels, computed before timing.
    expected: f64,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
    /// The update kernel's third updated array, read4's fourth stream.
    d: Vec<f32>,
}

impl Part {
    /// The part of `per` elements from `start`, filled as `kernel` reads them: the pattern
    /// where its checksums expect it, the update kernel's constant in `b`.
    fn new(kernel: Kernel, start: usize, per: usize) -> Part {
        let fill = |f: &dyn Fn(usize) -> f32| (start..start + per).map(f).collect();
        let streams = kernel == Kernel::Read4;
        Part {
            start,
            expected: pattern_sum(start, per) * if streams { 4.0 } else { 1.0 },
            a: fill(&pattern),
            b: if kernel == Kernel::Update {
                fill(&|_| UPDATE_B)
            } else if kernel.arrays() > 1 {
                fill(&pattern)
            } else {
                Vec::new()
            },
            c: if kernel == Kernel::Update || streams {
                fill(&pattern)
            } else if kernel.arrays() > 2 {
                fill(&|_| 1.0)
            } else {
                Vec::new()
            },
            d: if kernel == Kernel::Update || streams {
                fill(&pattern)
            } else {
                Vec::new()
            },
        }
    }
}

/// How a run is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// Elapsed time: what `profilednn peak` reports.
    Wall,
    /// The CPU time of the slowest thread (Linux; elsewhere wall time): on a machine shared
    /// with other jobs, the time this process was scheduled, comparable with a benchmark that
    /// times its kernels by CPU time. Stalls on memory count as CPU time; being descheduled
    /// does not.
    ThreadCpu,
}

/// The calling thread's CPU time in seconds (`None` where not available).
fn thread_cpu_seconds() -> Option<f64> {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the clock id is a Linux constant.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then_some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Runs `kernel` over `working_set` bytes split across `threads`, repeating small sets until
/// each run moves `bytes_per_run`; best of `runs`. Panics if a checksum does not match.
pub fn run(
    kernel: Kernel,
    working_set: u64,
    threads: usize,
    bytes_per_run: u64,
    runs: u32,
) -> BandwidthPoint {
    run_timed(
        kernel,
        working_set,
        threads,
        bytes_per_run,
        runs,
        Clock::Wall,
    )
}

/// [`run`], timed by `clock`.
pub fn run_timed(
    kernel: Kernel,
    working_set: u64,
    threads: usize,
    bytes_per_run: u64,
    runs: u32,
    clock: Clock,
) -> BandwidthPoint {
    let n_total = (working_set / 4 / kernel.arrays()).max(64 * threads as u64) as usize;
    let per = n_total / threads;
    // Each thread allocates and first-touches its own part (NUMA-local on multi-socket).
    let mut parts: Vec<Part> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || Part::new(kernel, t * per, per)))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let bytes_per_pass = (per * threads) as u64 * 4 * kernel.counted_words();
    let reps = bytes_per_run.div_ceil(bytes_per_pass).max(1);
    let mut best = 0.0f64;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let cpu = std::thread::scope(|s| {
            let hs: Vec<_> = parts
                .iter_mut()
                .map(|part| {
                    s.spawn(move || {
                        let cpu0 = thread_cpu_seconds();
                        passes(kernel, part, reps);
                        Some(thread_cpu_seconds()? - cpu0?)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .try_fold(0f64, |m, c| Some(m.max(c?)))
        });
        let wall = start.elapsed().as_secs_f64();
        let secs = match (clock, cpu) {
            (Clock::ThreadCpu, Some(c)) if c > 0.0 => c,
            _ => wall,
        };
        best = best.max((bytes_per_pass * reps) as f64 / secs / 1e9);
    }
    verify(kernel, &parts, per, reps * runs.max(1) as u64);
    BandwidthPoint {
        kernel: kernel.name().to_string(),
        working_set_bytes: working_set,
        threads,
        gbps: best,
        runs: runs.max(1),
    }
}

/// `reps` passes of `kernel` over `part`, each checked (the read kernels) or kept from being
/// optimized away: the timed work of one thread.
fn passes(kernel: Kernel, part: &mut Part, reps: u64) {
    let expected = part.expected;
    for _ in 0..reps {
        match kernel {
            Kernel::Read => {
                let got = sum(std::hint::black_box(&part.a));
                check(got, expected, "read");
            }
            Kernel::Read4 => {
                let a = std::hint::black_box(&part.a);
                check(sum4(a, &part.b, &part.c, &part.d), expected, "read4");
            }
            Kernel::Copy => {
                part.b.copy_from_slice(std::hint::black_box(&part.a));
                std::hint::black_box(&mut part.b);
            }
            Kernel::Triad => {
                let (a, b, c) = (&mut part.a, &part.b, &part.c);
                triad(a, std::hint::black_box(b), c);
                std::hint::black_box(&mut part.a);
            }
            Kernel::Update => {
                let (a, b) = (&mut part.a, std::hint::black_box(&part.b));
                update(a, b, &mut part.c, &mut part.d);
                std::hint::black_box((&mut part.a, &mut part.c, &mut part.d));
            }
        }
    }
}

/// Outside the timing: every element written has the value `kernel` must have produced after
/// `passes` passes over `parts` (of `per` elements each).
fn verify(kernel: Kernel, parts: &[Part], per: usize, passes: u64) {
    for part in parts {
        match kernel {
            Kernel::Read | Kernel::Read4 => {}
            Kernel::Copy => check(sum(&part.b), pattern_sum(part.start, per), "copy"),
            Kernel::Triad => check(
                sum(&part.a),
                pattern_sum(part.start, per) + 2.0 * per as f64,
                "triad",
            ),
            Kernel::Update => {
                // `passes` applications of a ↦ 8 − a: the pattern after an even number.
                let want = if passes.is_multiple_of(2) {
                    pattern_sum(part.start, per)
                } else {
                    UPDATE_B as f64 * per as f64 - pattern_sum(part.start, per)
                };
                for x in [&part.a, &part.c, &part.d] {
                    check(sum(x), want, "update")
                }
            }
        }
    }
}

fn check(got: f64, want: f64, what: &str) {
    assert!(
        got == want,
        "{what} bandwidth kernel checksum {got} != {want}: not every element was touched"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_hold_for_every_kernel_and_thread_split() {
        for k in Kernel::ALL {
            for threads in [1, 2] {
                let p = run(k, 3 * 64 * 1024, threads, 1 << 20, 1);
                assert!(p.gbps > 0.0);
                assert_eq!(p.threads, threads);
            }
        }
    }

    #[test]
    fn cpu_time_is_never_more_than_wall_time() {
        // One thread: its CPU time fits in the elapsed time, so the CPU-timed rate is at
        // least the wall-timed one of the same run (best of 1 each, so compare loosely: both
        // positive, and the CPU clock exists on Linux).
        let p = run_timed(Kernel::Copy, 1 << 20, 1, 8 << 20, 1, Clock::ThreadCpu);
        assert!(p.gbps > 0.0 && p.gbps.is_finite());
        #[cfg(target_os = "linux")]
        {
            let a = thread_cpu_seconds().unwrap();
            let w = Instant::now();
            let mut x = 0u64;
            for i in 0..2_000_000u64 {
                x = x.wrapping_mul(31).wrapping_add(std::hint::black_box(i));
            }
            std::hint::black_box(x);
            let cpu = thread_cpu_seconds().unwrap() - a;
            assert!(
                cpu > 0.0 && cpu <= w.elapsed().as_secs_f64() + 1e-3,
                "{cpu}"
            );
        }
    }

    #[test]
    fn update_passes_are_checked_whatever_their_parity() {
        // Odd and even numbers of passes (reps × runs) both end on the closed-form checksum;
        // an update that skipped its last element would not (it panics in `check`).
        for (ws, runs) in [(1 << 16, 1), (1 << 16, 2), (3 << 16, 3)] {
            let p = run(Kernel::Update, ws, 1, ws, runs);
            assert!(p.gbps > 0.0);
        }
        let mut a: Vec<f32> = (0..1000).map(pattern).collect();
        let (mut c, mut d) = (a.clone(), a.clone());
        let b = vec![UPDATE_B; 1000];
        update(&mut a, &b, &mut c, &mut d);
        update(&mut a[..999], &b[..999], &mut c[..999], &mut d[..999]);
        assert_ne!(sum(&a), pattern_sum(0, 1000));
        assert_ne!(sum(&d), pattern_sum(0, 1000));
    }

    #[test]
    fn the_four_stream_read_checks_every_stream() {
        // Each stream and each thread's part: a run over odd sizes sums the closed form, and a
        // sum that missed the last element of any one stream would not.
        for threads in [1, 2] {
            let p = run(Kernel::Read4, 4 * 4 * 1000 + 48, threads, 1 << 20, 2);
            assert!(p.gbps > 0.0 && p.gbps.is_finite());
        }
        let a: Vec<f32> = (0..1000).map(pattern).collect();
        assert_eq!(sum4(&a, &a, &a, &a), 4.0 * pattern_sum(0, 1000));
        let mut short = a.clone();
        short[999] = 0.0;
        for s in 0..4 {
            let mut v = [&a, &a, &a, &a];
            v[s] = &short;
            assert_ne!(
                sum4(v[0], v[1], v[2], v[3]),
                4.0 * pattern_sum(0, 1000),
                "{s}"
            );
        }
    }

    #[test]
    fn a_skipped_element_is_caught() {
        let a: Vec<f32> = (0..1000).map(pattern).collect();
        assert_eq!(sum(&a), pattern_sum(0, 1000));
        assert_ne!(sum(&a[2..]), pattern_sum(0, 1000));
        assert_ne!(sum(&a[..999]), pattern_sum(0, 1000));
    }

    #[test]
    fn write_allocate_counts_the_line_read_before_each_store() {
        // copy: read a (4n) + write b (4n) + read b's lines before writing them (4n).
        assert_eq!(Kernel::Copy.moved_per_counted() * 8.0, 12.0);
        // triad: read b, c (8n) + write a (4n) + read a's lines (4n).
        assert_eq!(Kernel::Triad.moved_per_counted() * 12.0, 16.0);
        assert_eq!(Kernel::Read.moved_per_counted(), 1.0);
        // update: read a, b, c, d (16n), write a, c, d (12n) into lines it has just read.
        assert_eq!(Kernel::Update.moved_per_counted() * 28.0, 28.0);
        assert_eq!(Kernel::Read4.moved_per_counted(), 1.0);
        for k in Kernel::NAMED {
            assert_eq!(Kernel::from_name(k.name()), Some(k));
        }
        assert_eq!(Kernel::from_name("scale"), None);
        // The floor kernel is asked for by name; the peak's sweep stays the four it was.
        assert!(!Kernel::ALL.contains(&Kernel::Read4));
    }

    #[test]
    fn sweep_reaches_the_maximum() {
        let s = sweep_sizes(64 << 20);
        assert_eq!(s.first(), Some(&(16 << 10)));
        assert_eq!(s.last(), Some(&(64 << 20)));
        // 4 × a 300 MiB L3: 256 MiB (in the L3) then 1200 MiB, no 1024 MiB beside it.
        let s = sweep_sizes(1200 << 20);
        assert_eq!(&s[s.len() - 2..], &[256 << 20, 1200 << 20]);
        // The standard 512 MiB keeps its 256 MiB step.
        assert_eq!(sweep_sizes(512 << 20).len(), 9);
    }
}
