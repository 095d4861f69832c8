"""profilednn kernels vs PyTorch, as ratios measured in the same run (medians).

Run: python -P python/bench.py [--quick] [--compile] [--cpu-time]  (threads: torch.set_num_threads,
1 and all; -P keeps the source tree's `profilednn` off sys.path, so the installed one is timed).
The output starts with the CPU, the load and the code path each kernel takes: figures from
different machines or paths are never to be mixed up. On a shared machine report the load with
the numbers, and prefer --cpu-time for the 1-thread rows.

Bounds: each row states the bytes it must move (what it reads and writes once, nothing else);
its bound is those bytes at the best rate `profilednn peak`'s read, copy, triad and update kernels
move over a working set of the row's size on the row's thread count (arrays allocated and
page-faulted before timing, best of 5, measured before and after the row's timings; with
--cpu-time timed by the slowest thread's CPU time, like the rows). Copy and
triad are counted with their write-allocate reads (the line read before a plain store), which
STREAM's convention leaves out: the kernels here write with non-temporal stores (the focal
gradient) or in place (the optimizers) and move only what they count, so against STREAM-counted
bandwidth they came out faster than their "bound" (0.45-0.65x). Working sets beyond the caches
(128 MB) take the best rate seen so far in the run at the row's thread count over a working set
at least as large (a machine busier while one row's bound is measured made that row look faster
than its bound; a smaller set may have been served by a large last-level cache). The update
kernel (x = b - x for three arrays beside a fourth, in place: four streams read, three written
back) is how Adam and LAMB use memory: on an AMD EPYC Zen 4 guest one thread's bandwidth grew
with the streams in flight (AdamW's step 44-52 GB/s, copy and triad 24-34), and rows printed
0.83-0.95x their bound.

Optimizer rows: the implementations of one optimizer are timed call by call in turn (medians of
11; 7 with --quick), so that a VM drifting 5-10 % within minutes (seen) moves them alike and their ratios hold.

Floors (optimizer rows): the bytes a step must read from memory (each array it reads, once: LAMB's
second pass may find the parameter and the update in the caches, so only its first pass counts)
at the rate of a loop that only reads, four streams side by side (`read4`; one thread's reads grow
with the streams in flight), over the row's working set on its thread count, best seen in the run
as for the bounds. No step that reads those bytes can take less time, so "x floor" says how much
faster any implementation could be: on an Intel Xeon guest (family 6 model 167) torch's fused f32
SGD ran 1.19-1.20x its floor at 1 and 2 threads, profilednn's 1.13-1.15x, and a plain C loop on
the same tensors (three loads, two stores, three operations per 16 elements) 0.92-0.95x torch's time.
"""

import argparse
import os
import statistics
import time

import torch
import torchvision

import profilednn
from profilednn.ops import sigmoid_focal_loss, sigmoid_focal_loss_and_grad


# Wall time, or this process's CPU time (--cpu-time: less disturbed by other jobs on a shared
# machine; with several threads it adds theirs up, spinning ones included).
_clock = time.perf_counter


def med(f, runs, before=None):
    """Median time of `f`; `before` (untimed) runs right before each call."""
    f()
    ts = []
    for _ in range(runs):
        if before:
            before()
        s = _clock()
        f()
        ts.append(_clock() - s)
    return statistics.median(ts)


def interleaved(fs, runs, before=None):
    """Median time of each of `fs` (each already called once, untimed), called in turn `runs`
    times (`before`, untimed, right before each call): the rows of one comparison see the same
    machine."""
    ts = [[] for _ in fs]
    for _ in range(runs):
        for f, t in zip(fs, ts):
            if before:
                before()
            s = _clock()
            f()
            t.append(_clock() - s)
    return [statistics.median(t) for t in ts]


def cpu_line():
    """The CPU (model name, and family/model/stepping: VMs often show a generic name), its
    bf16 units, and the code path each profilednn kernel takes here."""
    f = profilednn.cpu.features()
    ids = {}
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                k, _, v = line.partition(":")
                k = k.strip()
                if k in ("cpu family", "model", "stepping") and k not in ids:
                    ids[k] = v.strip()
                if not line.strip():
                    break
    except OSError:
        pass
    ident = ", ".join(f"{k} {v}" for k, v in ids.items())
    lines = [f"CPU: {f['model']}" + (f" ({ident})" if ident else "") + f", {os.cpu_count()} logical CPUs; "
             f"AVX512-BF16 {'yes' if f['avx512_bf16'] else 'no'}, AMX-BF16 {'yes' if f['amx_bf16'] else 'no'}"]
    for kernel, path in profilednn._native.kernel_paths().items():
        lines.append(f"  path: {kernel:<11} {path}")
    return "\n".join(lines)


def load():
    return "load " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + f" (1/5/15 min, {os.cpu_count()} CPUs)"


# A PyTorch op right before each optimizer step, as in training (the backward pass precedes
# it): PyTorch's OpenMP workers are then still spinning when the step starts.
_conv = torch.nn.Conv2d(64, 64, 3, padding=1)
_img = torch.rand(2, 64, 28, 28)


def torch_op():
    with torch.no_grad():
        _conv(_img)


class _StdThreads:
    """profilednn's kernels on their own std threads instead of PyTorch's OpenMP team."""

    def __init__(self, opt):
        self.opt = opt
        self.gomp = profilednn._common.torch_libgomp() if profilednn._native.openmp() else None

    def step(self):
        profilednn._native.use_openmp(None)
        try:
            self.opt.step()
        finally:
            if self.gomp:
                profilednn._native.use_openmp(self.gomp)


# The best memory bandwidth seen so far in this run, per (threads, clock, working set beyond the
# caches): what the machine can do does not change between rows, only how busy it is while a
# row's bound is measured. On a shared 2-vCPU VM the per-row measurement moved 14.4-19.6 GB/s
# within one run, and rows timed in a quiet moment came out "faster than their bound" (0.80x).
_best_seen = {}


def _last_level_cache():
    """The largest cache this CPU reports (sysfs; 0 when it says nothing)."""
    best = 0
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = os.listdir(base)
    except OSError:
        return 0
    for e in entries:
        try:
            with open(os.path.join(base, e, "size")) as f:
                size = f.read().strip()
        except OSError:
            continue
        if size and size[-1] in units and size[:-1].isdigit():
            best = max(best, int(size[:-1]) * units[size[-1]])
    return best


# Working sets at least this large are served from memory rather than the caches on most CPUs
# seen here (last-level caches up to 105 MB on Sapphire Rapids); their bound may take a better
# rate seen earlier in the run, but only one measured over a working set at least as large. An
# Intel Xeon guest reporting a 480 MB L3 (family 6 model 167) ran a 150 MB row's update kernel at
# 94 GB/s on 2 threads, from that cache, and when any earlier rate counted it became the bound of
# the 400 MB optimizer rows (1.9-2.3x "the bound"; ~50 GB/s measured on their own working sets).
_DRAM_SET = 128 << 20


BOUND_KERNELS = ("read", "copy", "triad", "update")
FLOOR_KERNELS = ("read4",)


def bandwidth(working_set, threads, kernels=BOUND_KERNELS):
    """Best bytes/s moved by `kernels` (by default `profilednn peak`'s read, copy, triad and
    update) over `working_set` bytes on `threads` threads, write-allocate traffic counted (see
    the module docstring), and the kernel that reached it; for working sets beyond the caches,
    the best seen so far in this run at this thread count by the same kernels."""
    best = (0.0, "")
    for k in kernels:
        _counted, moved = profilednn._native.bandwidth(k, int(max(working_set, 1 << 20)), threads, 5,
                                                       _clock is time.process_time)
        best = max(best, (moved * 1e9, k))
    if working_set >= _DRAM_SET:
        best = max(best, _best_at_least(working_set, threads, kernels))
        _best_seen.setdefault((threads, _clock, kernels), []).append((working_set, best))
    return best


def _best_at_least(working_set, threads, kernels=BOUND_KERNELS):
    """The best rate `kernels` reached in the run at `threads` over a working set of
    `working_set` bytes or more (a larger one gets no more help from the caches), or (0, "")."""
    seen = _best_seen.get((threads, _clock, kernels), [])
    return max((r for ws, r in seen if ws >= working_set), default=(0.0, ""))


class Bound:
    """A row's bound: `nbytes` at the best rate measured over `working_set` bytes, before the
    row's timings (`start`) and after (`finish`): a machine busier during one measurement does
    not make the bound look slower than it is."""

    def __init__(self, nbytes, working_set, threads, what, kernels=BOUND_KERNELS):
        self.nbytes, self.ws, self.threads, self.what = nbytes, working_set, threads, what
        self.kernels = kernels
        self.bw = bandwidth(working_set, threads, kernels)

    def finish(self):
        self.bw = max(self.bw, bandwidth(self.ws, self.threads, self.kernels))
        return self

    def rate(self):
        """The best rate: this row's, or the best seen in the run by the time it is printed."""
        if self.ws >= _DRAM_SET:
            return max(self.bw, _best_at_least(self.ws, self.threads, self.kernels))
        return self.bw

    @property
    def seconds(self):
        return self.nbytes / self.rate()[0]

    def describe(self):
        bw = self.rate()
        return f"{self.what} = {self.nbytes / 1e6:.0f} MB at {bw[0] / 1e9:.1f} GB/s ({bw[1]})"


def focal(rows, classes, dtype, runs, compile_too):
    x = (torch.rand(rows, classes) * 20 - 10).to(dtype)
    labels = torch.where(torch.arange(rows) % 50 == 0, torch.arange(rows) % classes, torch.full((rows,), classes))
    dense = torch.zeros(rows, classes, dtype=dtype)
    m = labels < classes
    dense[m.nonzero().squeeze(1), labels[m]] = 1
    buf = torch.empty_like(x)

    def tv():
        xr = x.detach().requires_grad_(True)
        loss = torchvision.ops.sigmoid_focal_loss(xr, dense, reduction="mean")
        loss.backward()

    def tv_fwd():
        with torch.no_grad():
            torchvision.ops.sigmoid_focal_loss(x, dense, reduction="mean")

    def ours_fwd():
        with torch.no_grad():
            sigmoid_focal_loss(x, dense, reduction="mean")

    def ours_autograd():
        # The drop-in: same call as torchvision's, dense targets, autograd backward.
        xr = x.detach().requires_grad_(True)
        sigmoid_focal_loss(xr, dense, reduction="mean").backward()

    es = x.element_size()
    n = x.numel()
    threads = torch.get_num_threads()
    # Bytes each row must move: read the logits (and dense targets / labels), write the gradient.
    bounds = {
        "fwd": Bound(2 * n * es, 2 * n * es, threads, "fwd: read logits + dense targets"),
        "autograd": Bound(3 * n * es, 3 * n * es, threads, "fwd+bwd: read logits + dense targets, write gradient"),
        "reused": Bound(2 * n * es + rows * 8, 2 * n * es + rows * 8, threads,
                        "fused: read logits + int64 labels, write gradient"),
    }
    # torchvision's fwd+bwd and the drop-in's, called in turn: their ratio ("x eager") is of
    # one machine state (a VM's memory bandwidth drifting 30 % within a minute was seen).
    tv()
    ours_autograd()
    eager, autograd = interleaved([tv, ours_autograd], max(3, runs // 2 + 1))
    res = {
        "eager": eager,
        "eager fwd": med(tv_fwd, max(1, runs // 2)),
        "fwd": med(ours_fwd, runs),
        "autograd": autograd,
        "fused": med(lambda: sigmoid_focal_loss_and_grad(x, labels, reduction="mean"), runs),
        # The same loss and targets as the autograd drop-in, by the fused call: the drop-in must
        # cost no more (issue 51: it took 3.5x, a zero gradient and a clone per backward).
        "fused dense": med(lambda: sigmoid_focal_loss_and_grad(x, dense, reduction="mean"), runs),
        "reused": med(lambda: sigmoid_focal_loss_and_grad(x, labels, reduction="mean", grad=buf), runs),
    }
    if compile_too:
        cf = torch.compile(torchvision.ops.sigmoid_focal_loss)

        def comp():
            xr = x.detach().requires_grad_(True)
            cf(xr, dense, reduction="mean").backward()

        res["compile"] = med(comp, runs)
    res["bounds"] = {k: b.finish() for k, b in bounds.items()}
    return res


def optimizers(runs, quick):
    sizes = []
    total = 0
    k = 0
    shapes = [64, 256, 147_456, 589_824, 1_048_576, 2_359_296]
    while total < 25_000_000 and len(sizes) < 161:
        sizes.append(shapes[k % 6])
        total += shapes[k % 6]
        k += 1
    out = []
    threads = torch.get_num_threads()

    def make(dtype, one=False):
        ps = [torch.nn.Parameter(torch.rand(n).to(dtype)) for n in ([total] if one else sizes)]
        for p in ps:
            p.grad = (torch.rand(p.numel()) * 0.01).to(dtype)
        return ps

    sgd = dict(lr=0.01, momentum=0.9)
    nag = dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4)
    adamw = dict(lr=1e-3)
    P = profilednn.optim
    # Bytes per parameter each implementation must move, and the distinct bytes it touches (the
    # bandwidth's working set). f32: SGD r p,g,buf w p,buf = 20 (ws 12); AdamW r p,g,m,v w p,m,v
    # = 28 (ws 16); LAMB two passes (r p,g,m,v w m,v; r p,m,v w p) = 40 (ws 16). bf16 parameters:
    # torch's fused step keeps bf16 parameter, gradient and state (SGD 2+2+2 r, 2+2 w = 10;
    # AdamW 14); profilednn keeps an f32 master and f32 state beside the bf16 parameter (SGD r
    # p,g (2 each), master, buf (4 each), w p (2), master, buf (4 each) = 22; AdamW 30); with
    # master="split" only the master's bottom halves (2) beside the bf16 parameter: SGD r p,low,g
    # (2 each), buf (4), w p,low (2 each), buf (4) = 18 (ws 10); AdamW 26 (ws 14); with
    # master="none" torch's layout (bf16 state, no master): torch's bytes, SGD 10, AdamW 14.
    # Bytes per parameter each implementation must read (the floor's): its arrays, a parameter
    # kept only as the rounding of its f32 master not read (f32 master: SGD g, master, buf = 10;
    # AdamW 14); LAMB p, g, m, v (16: its second pass may be served by the caches).
    def impls(theirs, ours, kw, nbytes, ws, reads, every=True):
        """torch's implementations (for-loop and foreach too when `every`) and ours, of the same
        optimizer with the same arguments: (label, constructor, bytes/param, working set/param,
        bytes read/param)."""
        rows = [(f"torch {k}", lambda ps, k=k: theirs(ps, **kw, **{k: True} if k == "fused" else {"foreach": k == "foreach"}),
                 nbytes[0], ws[0], reads[0]) for k in (["for-loop", "foreach", "fused"] if every else ["fused"])]
        rows.append(("profilednn", lambda ps: ours(ps, **kw), nbytes[-1], ws[-1], reads[-1]))
        if every:
            rows.append(("pdnn std threads", lambda ps: _StdThreads(ours(ps, **kw)), nbytes[-1], ws[-1], reads[-1]))
        return rows

    T = torch.optim
    lamb = lambda ps: P.LAMB(ps, lr=1e-3, weight_decay=0.01)
    cases = [
        ("SGD momentum", torch.float32, impls(T.SGD, P.SGD, sgd, [20], [12], [12])),
        ("SGD nesterov wd", torch.float32, impls(T.SGD, P.SGD, nag, [20], [12], [12], every=False)),
        ("AdamW", torch.float32, impls(T.AdamW, P.AdamW, adamw, [28], [16], [16])),
        ("LAMB", torch.float32, [("python for-loop", None, 40, 16, 16), ("profilednn", lamb, 40, 16, 16)]),
        ("SGD momentum", torch.bfloat16, impls(T.SGD, P.SGD, sgd, [10, 22], [6, 14], [6, 10], every=False)
         + [("pdnn split", lambda ps: P.SGD(ps, **sgd, master="split"), 18, 10, 10),
            ("pdnn none", lambda ps: P.SGD(ps, **sgd, master="none"), 10, 6, 6)]),
        ("SGD nesterov wd", torch.bfloat16, impls(T.SGD, P.SGD, nag, [10, 10], [6, 6], [6, 6], every=False)[:1]
         + [("pdnn none", lambda ps: P.SGD(ps, **nag, master="none"), 10, 6, 6)]),
        ("AdamW", torch.bfloat16, impls(T.AdamW, P.AdamW, adamw, [14, 30], [8, 18], [8, 14], every=False)
         + [("pdnn split", lambda ps: P.AdamW(ps, **adamw, master="split"), 26, 14, 14),
            ("pdnn none", lambda ps: P.AdamW(ps, **adamw, master="none"), 14, 8, 8)]),
    ]
    if quick:
        cases = [c for c in cases if c[1] == torch.float32][:3]
    # The same parameters as one tensor (an embedding-sized one): the threads share it.
    cases.append(("SGD 1 tensor", torch.float32, impls(T.SGD, P.SGD, sgd, [20], [12], [12], every=False)))
    cases.append(("LAMB 1 tensor", torch.float32, [("profilednn", lamb, 40, 16, 16)]))
    for name, dtype, impls in cases:
        # Every implementation of the case built first, then timed call by call in turn: a VM
        # that drifts 5-10 % within minutes (seen) moves them all alike, so their ratios hold.
        built = []
        for label, mk, bpe, ws, reads in impls:
            bound = Bound(total * bpe, total * ws, threads, f"{bpe} B/param")
            floor = Bound(total * reads, total * ws, threads, f"read {reads} B/param", FLOOR_KERNELS)
            ps = make(dtype, one=name.endswith("1 tensor"))
            if mk is None:
                st = [dict(m=torch.zeros_like(p), v=torch.zeros_like(p)) for p in ps]

                def lamb_loop(ps=ps, st=st):
                    with torch.no_grad():
                        for p, s in zip(ps, st):
                            s["m"].mul_(0.9).add_(p.grad, alpha=0.1)
                            s["v"].mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                            u = (s["m"] / 0.1) / ((s["v"] / 0.001).sqrt() + 1e-6) + 0.01 * p
                            pn, un = p.norm(), u.norm()
                            r = (pn / un) if pn > 0 and un > 0 else 1.0
                            p.sub_(1e-3 * r * u)

            try:
                step, err = (lamb_loop if mk is None else mk(ps).step), ""
                # Untimed: the first step allocates the state, and one this build cannot take
                # fails here.
                step()
            except (RuntimeError, ValueError) as e:
                step, err = None, str(e).splitlines()[0][:60]
            built.append((label, step, bound, floor, err))
        times = interleaved([b[1] for b in built if b[1] is not None], 2 * runs + 1, torch_op)
        for label, step, bound, floor, err in built:
            t = times.pop(0) if step is not None else None
            out.append((name, str(dtype)[6:], label, t, bound.finish(), floor.finish(), err))
    return total, len(sizes), out


def step_in_backward(runs, quick):
    """The optimizer step fused into backward (profilednn.optim.step_in_backward) against
    torch's AdamW(fused=True) step + zero_grad, on a 25 M-parameter MLP and ResNet-50, f32 and
    bf16 parameters (bf16: torch's fused layout, bf16 state, on both sides). Each row times in
    turn: forward + backward alone (no step), then with torch's step after it, then with ours
    inside; the step's own cost is each minus the first."""
    import torchvision

    def mlp():
        torch.manual_seed(0)
        layers = []
        for _ in range(6):
            layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers), torch.randn(16, 2048)

    def resnet50():
        torch.manual_seed(0)
        return torchvision.models.resnet50(), torch.randn(2, 3, 64, 64)

    rows = []
    for name, make in (("MLP 25M", mlp), ("ResNet-50", resnet50))[: 1 if quick else 2]:
        for dtype in (torch.float32, torch.bfloat16):
            models = [make() for _ in range(3)]
            for m, _ in models:
                m.to(dtype)
            x = models[0][1].to(dtype)
            plain, theirs_m, ours_m = (m for m, _ in models)
            theirs = torch.optim.AdamW(theirs_m.parameters(), lr=1e-4, fused=True)
            master = "none" if dtype == torch.bfloat16 else "f32"
            ours = profilednn.optim.step_in_backward(profilednn.optim.AdamW(ours_m.parameters(), lr=1e-4,
                                                                            master=master))

            def fwd_bwd():
                plain.zero_grad(set_to_none=True)
                plain(x).float().square().mean().backward()

            def torch_step():
                theirs.zero_grad(set_to_none=True)
                theirs_m(x).float().square().mean().backward()
                theirs.step()

            def ours_in_backward():
                ours.zero_grad()
                ours_m(x).float().square().mean().backward()
                ours.step()

            for f in (fwd_bwd, torch_step, ours_in_backward):
                f()
            t0, t1, t2 = interleaved([fwd_bwd, torch_step, ours_in_backward], 2 * runs + 1)
            params = sum(p.numel() for p in plain.parameters())
            rows.append((name, str(dtype)[6:], params, t0, t1, t2))
    return rows


def print_step_in_backward(runs, quick):
    print(f"\nstep in backward: AdamW; fwd+bwd alone, then with torch's fused=True step + zero_grad after it, "
          f"then with profilednn's step inside backward, timed in turn (medians of {2 * runs + 1}); the step's "
          f"cost is each minus fwd+bwd; target x: torch's step cost / ours >= 1.2; {load()}")
    print(f"{'model':<10} {'dtype':>8} {'params':>8} {'fwd+bwd ms':>10} {'torch ms':>9} {'ours ms':>8} "
          f"{'torch step':>10} {'our step':>9} {'x':>6}")
    for name, dt, params, t0, t1, t2 in step_in_backward(runs, quick):
        a, b = t1 - t0, t2 - t0
        x = f"{a / b:5.2f}x" if b > 0 else "  inf"
        print(f"{name:<10} {dt:>8} {params / 1e6:7.1f}M {t0 * 1e3:10.1f} {t1 * 1e3:9.1f} {t2 * 1e3:8.1f} "
              f"{a * 1e3:10.1f} {b * 1e3:9.1f} {x:>6}")


def main():
    global _clock
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile of torchvision's loss (slow to compile)")
    ap.add_argument("--only-step-in-backward", action="store_true",
                    help="only the optimizer step fused into backward against torch's fused step + zero_grad")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time the 1-thread rows (and their bandwidth) by CPU time, not wall time (a loaded machine)")
    a = ap.parse_args()
    runs = 3 if a.quick else 5
    print(cpu_line())
    print(f"torch {torch.__version__}; {load()} at start; medians of {runs}, "
          f"{'process CPU time at 1 thread, wall time at more' if a.cpu_time else 'wall time'}")
    print(f"bounds: last-level cache {_last_level_cache() >> 20} MB; a bound over {_DRAM_SET >> 20} MB or more "
          f"takes the best rate seen in the run over as many bytes or more, a smaller one its own")
    for threads in [1, os.cpu_count()]:
        torch.set_num_threads(threads)
        # CPU time adds up the threads (and any spinning ones): only 1-thread rows use it.
        _clock = time.process_time if a.cpu_time and threads == 1 else time.perf_counter
        print(f"\n== {threads} thread(s), {load()}")
        if a.only_step_in_backward:
            print_step_in_backward(runs, a.quick)
            continue
        print("focal loss, mean, alpha 0.25, gamma 2. fwd: forward only (no_grad); fwd+bwd: the autograd drop-in,\n"
              "forward then backward (dense targets); fused: sigmoid_focal_loss_and_grad with class labels, a fresh\n"
              "gradient each call / a reused one (grad=); x eager and x compile compare fwd+bwd (x eager: the\n"
              "two called in turn);\n"
              "x fused: fwd+bwd / the fused call on the same dense targets (target <= 1.15x);\n"
              "x bound: time / bound of fwd+bwd and of reused (bytes and bandwidth listed under each shape)")
        print(f"{'shape':<24} {'dtype':>8} {'fwd ms':>8} {'eager':>8} {'fwd+bwd':>8} {'eager':>8} {'fused':>8} "
              f"{'reused':>8} {'x eager':>8} {'x compile':>9} {'x fused':>8} {'x bound':>8} {'x bound':>8}")
        shapes = [("small 64000x91", 64_000, 91)] + ([] if a.quick else [("RetinaNet 2x120087x264", 240_174, 264)])
        for name, rows, classes in shapes:
            notes = []
            for dtype in [torch.float32, torch.bfloat16]:
                r = focal(rows, classes, dtype, runs, a.compile)
                b = r["bounds"]
                comp = f"{r['compile'] / r['autograd']:.1f}x" if "compile" in r else "-"
                ms = lambda k: f"{r[k] * 1e3:8.1f}"
                print(f"{name:<24} {str(dtype)[6:]:>8} {ms('fwd')} {ms('eager fwd')} {ms('autograd')} {ms('eager')} "
                      f"{ms('fused')} {ms('reused')} {r['eager'] / r['autograd']:7.1f}x {comp:>9} "
                      f"{r['autograd'] / r['fused dense']:7.2f}x "
                      f"{r['autograd'] / b['autograd'].seconds:7.2f}x {r['reused'] / b['reused'].seconds:7.2f}x")
                notes += [f"  {str(dtype)[6:]} {bd.describe()}" for bd in b.values()]
            print("\n".join(notes))
        total, ntensors, rows = optimizers(runs, a.quick)
        print(f"\noptimizer step, {total / 1e6:.1f} M parameters in {ntensors} tensors, each step right after a "
              f"PyTorch convolution (as in training); the implementations of a row group timed in turn, "
              f"medians of {2 * runs + 1}; kernels on {'OpenMP' if profilednn._native.openmp() else 'std'} "
              f"threads; {load()}")
        print("x floor: time / the time to only read what the step reads (see the module docstring): no\n"
              "implementation of the step can be faster than 1.00x")
        print(f"{'optimizer':<16} {'params':>8} {'implementation':<16} {'ms':>8} {'x bound':>8} {'x floor':>8}  "
              f"bound; floor")
        for name, dt, label, t, bound, floor, err in rows:
            tm = (f"{t * 1e3:8.2f} {t / bound.seconds:7.2f}x {t / floor.seconds:7.2f}x" if t is not None
                  else f"{'-':>8} {'-':>8} {'-':>8}")
            print(f"{name:<16} {dt:>8} {label:<16} {tm}  {bound.describe()}; {floor.describe()}"
                  f"{'  (' + err + ')' if err else ''}")
        print_step_in_backward(runs, a.quick)
    print(f"\nend: {load()}")


if __name__ == "__main__":
    main()
