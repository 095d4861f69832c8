"""profilednn kernels vs PyTorch, as ratios measured in the same run (medians).

Run: python python/bench.py [--quick] [--compile]  (threads: torch.set_num_threads, 1 and all)
Report the machine load with the numbers: this box is shared.
"""

import argparse
import os
import statistics
import time

import torch
import torchvision

import profilednn
from profilednn.ops import sigmoid_focal_loss, sigmoid_focal_loss_and_grad


def med(f, runs, before=None):
    """Median time of `f`; `before` (untimed) runs right before each call."""
    f()
    ts = []
    for _ in range(runs):
        if before:
            before()
        s = time.perf_counter()
        f()
        ts.append(time.perf_counter() - s)
    return statistics.median(ts)


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


def bandwidth_gbps(nbytes):
    a = torch.ones(nbytes // 4)
    b = torch.empty_like(a)
    t = med(lambda: b.copy_(a), 5)
    return 2 * nbytes / t / 1e9


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

    res = {
        "eager": med(tv, max(1, runs // 2)),
        "eager fwd": med(tv_fwd, max(1, runs // 2)),
        "fwd": med(ours_fwd, runs),
        "autograd": med(ours_autograd, runs),
        "fused": med(lambda: sigmoid_focal_loss_and_grad(x, labels, reduction="mean"), runs),
        "reused": med(lambda: sigmoid_focal_loss_and_grad(x, labels, reduction="mean", grad=buf), runs),
    }
    if compile_too:
        cf = torch.compile(torchvision.ops.sigmoid_focal_loss)

        def comp():
            xr = x.detach().requires_grad_(True)
            cf(xr, dense, reduction="mean").backward()

        res["compile"] = med(comp, runs)
    # Bytes that must move for the fused step with class labels: read the logits, write the
    # gradient, read one label per row.
    nbytes = 2 * x.numel() * x.element_size() + rows * 8
    res["bound"] = nbytes / (bandwidth_gbps(x.numel() * 4) * 1e9)
    return res


def optimizers(runs):
    sizes = []
    total = 0
    k = 0
    shapes = [64, 256, 147_456, 589_824, 1_048_576, 2_359_296]
    while total < 25_000_000 and len(sizes) < 161:
        sizes.append(shapes[k % 6])
        total += shapes[k % 6]
        k += 1
    out = []
    bw = bandwidth_gbps(64 << 20)

    def make():
        ps = [torch.nn.Parameter(torch.rand(n)) for n in sizes]
        for p in ps:
            p.grad = torch.rand_like(p) * 0.01
        return ps

    cases = [
        ("SGD momentum", 20, [("torch for-loop", lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=False)),
                              ("torch foreach", lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, foreach=True)),
                              ("torch fused", lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, fused=True)),
                              ("profilednn", lambda ps: profilednn.optim.SGD(ps, lr=0.01, momentum=0.9)),
                              ("pdnn std threads", lambda ps: _StdThreads(profilednn.optim.SGD(ps, lr=0.01, momentum=0.9)))]),
        ("AdamW", 28, [("torch for-loop", lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=False)),
                       ("torch foreach", lambda ps: torch.optim.AdamW(ps, lr=1e-3, foreach=True)),
                       ("torch fused", lambda ps: torch.optim.AdamW(ps, lr=1e-3, fused=True)),
                       ("profilednn", lambda ps: profilednn.optim.AdamW(ps, lr=1e-3)),
                       ("pdnn std threads", lambda ps: _StdThreads(profilednn.optim.AdamW(ps, lr=1e-3)))]),
        ("LAMB", 40, [("python for-loop", None), ("profilednn", lambda ps: profilednn.optim.LAMB(ps, lr=1e-3, weight_decay=0.01))]),
    ]
    for name, bpe, impls in cases:
        bound = total * bpe / (bw * 1e9)
        for label, mk in impls:
            ps = make()
            if mk is None:
                st = [dict(m=torch.zeros_like(p), v=torch.zeros_like(p)) for p in ps]

                def lamb_loop():
                    with torch.no_grad():
                        for p, s in zip(ps, st):
                            s["m"].mul_(0.9).add_(p.grad, alpha=0.1)
                            s["v"].mul_(0.999).addcmul_(p.grad, p.grad, value=0.001)
                            u = (s["m"] / 0.1) / ((s["v"] / 0.001).sqrt() + 1e-6) + 0.01 * p
                            pn, un = p.norm(), u.norm()
                            r = (pn / un) if pn > 0 and un > 0 else 1.0
                            p.sub_(1e-3 * r * u)

                t = med(lamb_loop, runs, torch_op)
            else:
                opt = mk(ps)
                t = med(opt.step, runs, torch_op)
            out.append((name, label, t, bound))
    return total, len(sizes), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile of torchvision's loss (slow to compile)")
    a = ap.parse_args()
    runs = 3 if a.quick else 5
    print(f"torch {torch.__version__}, profilednn ISA {profilednn.isa()}, load {os.getloadavg()[0]:.2f}, medians of {runs}")
    for threads in [1, os.cpu_count()]:
        torch.set_num_threads(threads)
        print(f"\n== {threads} thread(s)")
        print("focal loss, mean, alpha 0.25, gamma 2. fwd: forward only (no_grad); fwd+bwd: the autograd drop-in,\n"
              "forward then backward (dense targets); fused: sigmoid_focal_loss_and_grad with class labels, a fresh\n"
              "gradient each call / a reused one (grad=); x eager and x compile compare fwd+bwd; x bound compares reused")
        print(f"{'shape':<24} {'dtype':>5} {'fwd ms':>8} {'eager':>8} {'fwd+bwd':>8} {'eager':>8} {'fused':>8} "
              f"{'reused':>8} {'x eager':>8} {'x compile':>9} {'x bound':>8}")
        shapes = [("small 64000x91", 64_000, 91)] + ([] if a.quick else [("RetinaNet 2x120087x264", 240_174, 264)])
        for name, rows, classes in shapes:
            for dtype in [torch.float32, torch.bfloat16]:
                r = focal(rows, classes, dtype, runs, a.compile)
                comp = f"{r['compile'] / r['autograd']:.1f}x" if "compile" in r else "-"
                ms = lambda k: f"{r[k] * 1e3:8.1f}"
                print(f"{name:<24} {str(dtype)[6:]:>5} {ms('fwd')} {ms('eager fwd')} {ms('autograd')} {ms('eager')} "
                      f"{ms('fused')} {ms('reused')} {r['eager'] / r['autograd']:7.1f}x {comp:>9} "
                      f"{r['reused'] / r['bound']:7.2f}x")
        total, ntensors, rows = optimizers(runs)
        print(f"\noptimizer step, {total / 1e6:.1f} M parameters in {ntensors} tensors, each step right after a "
              f"PyTorch convolution (as in training); kernels on {'OpenMP' if profilednn._native.openmp() else 'std'} threads")
        print(f"{'optimizer':<14} {'implementation':<16} {'ms':>8} {'x bound':>8}")
        for name, label, t, bound in rows:
            print(f"{name:<14} {label:<16} {t * 1e3:8.2f} {t / bound:7.2f}x")


if __name__ == "__main__":
    main()
