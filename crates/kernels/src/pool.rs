//! Where the kernels' threads come from.
//!
//! By default: scoped std threads. Inside PyTorch that means a second set of threads beside
//! PyTorch's own OpenMP pool, whose workers keep spinning for a while after every parallel
//! region — on a machine with as many cores as threads, our second thread then shares a core
//! with a spinning OpenMP worker. A host that runs on libgomp (PyPI's torch does) can hand us
//! its `GOMP_parallel` (`use_openmp`): the kernels then run on that same team of threads, one
//! pool for the whole process.
//!
//! Work is split into `n` jobs that threads claim from a shared counter, so the result does not
//! depend on which thread runs which job, nor on how many threads the runtime actually gives us.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// libgomp's entry point for `#pragma omp parallel`: runs `f(data)` on a team of
/// `num_threads` threads (the caller is one of them) and returns when all are done.
type GompParallel = unsafe extern "C" fn(
    f: unsafe extern "C" fn(*mut c_void),
    data: *mut c_void,
    num_threads: u32,
    flags: u32,
);

/// The registered `GOMP_parallel` (0: none, use std threads).
static GOMP_PARALLEL: AtomicUsize = AtomicUsize::new(0);

/// Runs the kernels on an OpenMP runtime's threads from now on (`None`: back to std threads).
///
/// # Safety
/// `gomp_parallel` must be the address of libgomp's `GOMP_parallel` in a library that stays
/// loaded for the rest of the process.
pub unsafe fn use_openmp(gomp_parallel: Option<*const c_void>) {
    GOMP_PARALLEL.store(gomp_parallel.map_or(0, |p| p as usize), Ordering::SeqCst);
}

/// Whether an OpenMP runtime is registered.
pub fn openmp() -> bool {
    GOMP_PARALLEL.load(Ordering::SeqCst) != 0
}

struct Team<'a> {
    job: &'a (dyn Fn(usize) + Sync),
    jobs: usize,
    next: AtomicUsize,
    panicked: AtomicBool,
}

impl Team<'_> {
    /// Claims and runs jobs until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.jobs {
                return;
            }
            (self.job)(i);
        }
    }
}

unsafe extern "C" fn member(data: *mut c_void) {
    // SAFETY: `data` is the `Team` that `run` keeps alive until GOMP_parallel returns.
    let team = unsafe { &*(data as *const Team) };
    // A panic must not unwind into C: record it, `run` re-raises it on the calling thread.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| team.work())).is_err() {
        team.panicked.store(true, Ordering::SeqCst);
    }
}

/// Runs `job(0) … job(jobs − 1)`, each exactly once, on up to `threads` threads (the caller's
/// included); returns when all are done.
pub fn run(jobs: usize, threads: usize, job: &(dyn Fn(usize) + Sync)) {
    let threads = threads.min(jobs);
    if threads <= 1 {
        (0..jobs).for_each(job);
        return;
    }
    let team = Team {
        job,
        jobs,
        next: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
    };
    let gomp = GOMP_PARALLEL.load(Ordering::SeqCst);
    if gomp != 0 {
        // SAFETY: registered through `use_openmp`, whose caller vouches for the address; the
        // team outlives the call, which returns only when every member is done.
        unsafe {
            let f: GompParallel = std::mem::transmute::<usize, GompParallel>(gomp);
            f(
                member,
                &team as *const Team as *mut c_void,
                threads as u32,
                0,
            );
        }
        if team.panicked.load(Ordering::SeqCst) {
            panic!("a kernel job panicked on an OpenMP thread");
        }
        return;
    }
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(|| team.work());
        }
        team.work();
    });
}

/// Runs `f` on each item, `threads` at a time, and returns the results in item order.
pub fn map<I: Send, R: Send>(items: Vec<I>, threads: usize, f: impl Fn(I) -> R + Sync) -> Vec<R> {
    let slots: Vec<std::sync::Mutex<Option<I>>> = items
        .into_iter()
        .map(|i| std::sync::Mutex::new(Some(i)))
        .collect();
    let out: Vec<std::sync::Mutex<Option<R>>> =
        slots.iter().map(|_| std::sync::Mutex::new(None)).collect();
    run(slots.len(), threads, &|i| {
        let item = slots[i]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .expect("each job runs once");
        let r = f(item);
        *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
    });
    out.into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every job ran")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_runs_once_in_order_of_results() {
        for threads in [1, 2, 5] {
            let r = map((0..37).collect(), threads, |i: u64| i * i);
            assert_eq!(r, (0..37).map(|i| i * i).collect::<Vec<_>>());
        }
        let hits: Vec<AtomicUsize> = (0..100).map(|_| AtomicUsize::new(0)).collect();
        run(100, 3, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    /// A stand-in for GOMP_parallel that runs the member on 3 std threads: checks the calling
    /// convention (every job once, whatever the team size) without linking libgomp.
    unsafe extern "C" fn fake_gomp(
        f: unsafe extern "C" fn(*mut c_void),
        data: *mut c_void,
        num_threads: u32,
        _flags: u32,
    ) {
        assert!(num_threads >= 2);
        let data = data as usize;
        std::thread::scope(|s| {
            for _ in 0..3 {
                // SAFETY: `f` and `data` are the job function and state the pool handed to this
                // fake GOMP_parallel, alive until the scope ends.
                s.spawn(move || unsafe { f(data as *mut c_void) });
            }
        });
    }

    #[test]
    fn an_openmp_runtime_runs_every_job_once() {
        // SAFETY: `fake_gomp` has GOMP_parallel's signature and contract.
        unsafe { use_openmp(Some(fake_gomp as *const c_void)) };
        let r = map((0..50).collect(), 2, |i: u64| i + 1);
        // SAFETY: back to std threads (no function pointer).
        unsafe { use_openmp(None) };
        assert_eq!(r, (1..51).collect::<Vec<_>>());
    }
}
