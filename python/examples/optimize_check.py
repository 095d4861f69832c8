"""Checks `profilednn.optimize` on this CPU: for each model, the step as written against the
step `optimize` returns, timed alternately in the same run, and their first losses.

Target (issue 39): never slower than as written (optimized median step <= 1.03x the baseline's),
first losses equal to f32 rounding (bf16: within its rounding). Prints the CPU, the load, each
model's report and a MET/MISSED line; asserts nothing (timings are for benchmarks, not tests).

    python -P python/examples/optimize_check.py                       # resnet18, unet, vit
    python -P python/examples/optimize_check.py --models retinanet --budget 400
    python -P python/examples/optimize_check.py --models focal_head,convnext   # issue 51's cases
"""

import argparse
import copy
import os
import statistics
import time

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import profilednn
from profilednn._optimize.config import bound, focal_sites

# Held in a tuple: optimize() swaps every module attribute bound to torchvision's focal loss.
TORCHVISION_FOCAL = (focal_sites()[1],)


def resnet18():
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=100)
    x, y = torch.rand(16, 3, 112, 112), torch.randint(0, 100, (16,))
    return m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9), (x, y), F.cross_entropy


class UNet(nn.Module):
    """A small U-Net: two downsamplings, transposed-convolution upsampling, skip concatenations."""

    def __init__(self, c=16):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

        self.d1, self.d2, self.mid = block(3, c), block(c, 2 * c), block(2 * c, 4 * c)
        self.u2, self.b2 = nn.ConvTranspose2d(4 * c, 2 * c, 2, stride=2), block(4 * c, 2 * c)
        self.u1, self.b1 = nn.ConvTranspose2d(2 * c, c, 2, stride=2), block(2 * c, c)
        self.out = nn.Conv2d(c, 1, 1)

    def forward(self, x):
        d1 = self.d1(x)
        d2 = self.d2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.b2(torch.cat([self.u2(m), d2], 1))
        u1 = self.b1(torch.cat([self.u1(u2), d1], 1))
        return self.out(u1)


def unet():
    torch.manual_seed(0)
    m = UNet()
    x, y = torch.rand(4, 3, 128, 128), (torch.rand(4, 1, 128, 128) > 0.5).float()
    return m, torch.optim.Adam(m.parameters(), lr=1e-3), (x, y), F.binary_cross_entropy_with_logits


def vit():
    torch.manual_seed(0)
    m = torchvision.models.VisionTransformer(image_size=96, patch_size=8, num_layers=4, num_heads=3, hidden_dim=192,
                                             mlp_dim=768, num_classes=100)
    x, y = torch.rand(8, 3, 96, 96), torch.randint(0, 100, (8,))
    return m, torch.optim.AdamW(m.parameters(), lr=1e-3), (x, y), F.cross_entropy


def retinanet():
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    import retinanet_case_study as cs

    torch.manual_seed(0)
    m = cs.model(264)
    m.train()
    example = cs.batch(2, 320, 264, torch.Generator().manual_seed(99))
    opt = torch.optim.SGD([p for p in m.parameters() if p.requires_grad], lr=0.01, momentum=0.9, weight_decay=1e-4)
    return m, opt, (example, None), lambda losses, _: sum(v.float() for v in losses.values())


def focal_loss_closure():
    """The loss as a user's script may build it (issue 51): torchvision's focal loss imported
    inside the function, held by the lambda's closure (no module attribute binds it)."""
    from torchvision.ops import sigmoid_focal_loss

    return lambda out, y: sigmoid_focal_loss(out, y, alpha=0.25, gamma=2.0, reduction="sum") / 100


def focal_head():
    """A RetinaNet-like classification head (9 anchors x 80 classes on a 32 x 32 map) trained
    with the focal loss through a closure: most of its step is the loss."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 9 * 80, 1),
                      nn.Flatten(2), nn.Unflatten(1, (9, 80)))

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = m

        def forward(self, x):  # [N, 9, 80, HW] -> [N, HW * 9, 80]
            return self.body(x).permute(0, 3, 1, 2).flatten(1, 2)

    g = torch.Generator().manual_seed(1)
    x, y = torch.rand(2, 64, 32, 32, generator=g), (torch.rand(2, 32 * 32 * 9, 80, generator=g) < 0.01).float()
    head = Head()
    return head, torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9), (x, y), focal_loss_closure()


def convnext():
    """ConvNeXt-T (depthwise 7 x 7 convolutions; issue 51: the fused optimizer refused them)."""
    torch.manual_seed(0)
    m = torchvision.models.convnext_tiny(num_classes=100)
    x, y = torch.rand(2, 3, 96, 96), torch.randint(0, 100, (2,))
    return m, torch.optim.AdamW(m.parameters(), lr=1e-3), (x, y), F.cross_entropy


MODELS = {"resnet18": resnet18, "unet": unet, "vit": vit, "retinanet": retinanet, "focal_head": focal_head,
          "convnext": convnext}


def step(model, opt, loss_fn, example):
    inputs, targets = example
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    opt.zero_grad()
    loss = loss_fn(model(*inputs), targets)
    loss.backward()
    opt.step()
    return loss.item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,unet,vit")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--steps", type=int, default=7)
    a = ap.parse_args()
    print(f"CPU: {profilednn.cpu.features()['model']} | load {os.getloadavg()[0]:.2f} | torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads", flush=True)
    for name in a.models.split(","):
        model, opt, example, loss_fn = MODELS[name]()
        threads = torch.get_num_threads()
        base_model, base_opt = copy.deepcopy((model, opt))
        # Both sides take their first step before the alternation: pair i is the same step.
        first_base = step(base_model, base_opt, loss_fn, example)
        t0 = time.monotonic()
        m2, o2, report = profilednn.optimize(model, opt, example, loss_fn, budget_s=a.budget)
        spent = time.monotonic() - t0
        print(report, flush=True)
        # A kept fused focal loss is bound process-wide (torchvision.ops, the loss's closure):
        # the step as written gets torchvision's back for its own steps, and the next model
        # starts as written.
        swapped = focal_sites(loss_fn, model)[0] if TORCHVISION_FOCAL[0] is not None else []
        as_written = lambda: bound(swapped, TORCHVISION_FOCAL[0])  # noqa: E731
        optimized_threads = torch.get_num_threads()
        first_opt = step(m2, o2, loss_fn, example)
        bf16 = any(c.applied and c.name == "bf16 autocast" for c in report.changes)
        tol = 2e-2 if bf16 else 1e-4
        agree = abs(first_opt - first_base) <= tol * abs(first_base)
        tb, to = [], []
        for i in range(2 + a.steps):
            for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                torch.set_num_threads(threads if which == 0 else optimized_threads)
                t = time.perf_counter()
                if which == 0:
                    with as_written():
                        step(base_model, base_opt, loss_fn, example)
                else:
                    step(m2, o2, loss_fn, example)
                if i >= 2:
                    (tb if which == 0 else to).append((time.perf_counter() - t) * 1e3)
        torch.set_num_threads(threads)
        for s in swapped:
            s.set(TORCHVISION_FOCAL[0])
        mb, mo = statistics.median(tb), statistics.median(to)
        met = mo <= 1.03 * mb
        print(f"{name}: as written {mb:.1f} ms, optimized {mo:.1f} ms per step (medians of {a.steps}, alternated): "
              f"{mb / mo:.2f}x; optimize took {spent:.0f} s; first loss {first_base:.6f} vs {first_opt:.6f} "
              f"({'agree' if agree else 'DIFFER'} within {tol:g}); {'MET' if met else 'MISSED'}: never slower "
              f"(<= 1.03x the baseline's step) | load {os.getloadavg()[0]:.2f}\n", flush=True)


if __name__ == "__main__":
    main()
