"""Eager against `torch.compile` on four training steps, f32 and bf16 autocast (issue 55's table).

    python -P python/examples/compile_table.py                  # gpt, bert, convnext, efficientnet
    python -P python/examples/compile_table.py --models bert --pairs 12

For each model and precision: an eager copy and a compiled copy of the same initial weights,
each with its own optimizer; the compiled copy's first step (its compile) is timed apart, then
steps of the two alternate (eager, compiled, eager, …) so that a slow phase of a shared machine
lands on both. Prints the median ms per step of each, their ratio, and the compile warm-up.
"""

import argparse
import copy
import os
import statistics
import sys
import time

import torch
import torch._inductor.config
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "torch"))
import train_transformer as tt  # noqa: E402


def lm(kind):
    def make():
        vocab, seq, d, heads, layers, batch = 512, 128, 256, 4, 4, 8
        net = tt.BERT(vocab, seq, d, heads, layers) if kind == "bert" else tt.GPT(vocab, seq, d, heads, layers)
        g = torch.Generator().manual_seed(1)
        x = torch.randint(0, vocab, (batch, seq), generator=g)
        y = torch.randint(0, vocab, (batch, seq), generator=g)
        return net, torch.optim.AdamW, x, y, lambda out, y: F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
    return make


def cnn(ctor, opt):
    def make():
        net = ctor(num_classes=100)
        g = torch.Generator().manual_seed(1)
        x = torch.randn(8, 3, 96, 96, generator=g)
        y = torch.randint(0, 100, (8,), generator=g)
        return net, opt, x, y, F.cross_entropy
    return make


MODELS = {
    "gpt": lm("gpt"),
    "bert": lm("bert"),
    "convnext": cnn(torchvision.models.convnext_tiny, torch.optim.AdamW),
    "efficientnet": cnn(torchvision.models.efficientnet_b0, lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
}


def step(model, opt, loss_fn, x, y, bf16):
    t0 = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return (time.perf_counter() - t0) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt,bert,convnext,efficientnet")
    ap.add_argument("--pairs", type=int, default=8, help="alternated eager/compiled step pairs")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    # Compile in this process: on 2 cores a pool of compile workers slows the steps after it.
    torch._inductor.config.compile_threads = 1
    print(f"torch {torch.__version__}, {a.threads} threads, load {os.getloadavg()[0]:.2f}", flush=True)
    print("| model | eager f32 | compiled f32 | eager bf16 | compiled bf16 | compile warm-up |")
    print("|---|---|---|---|---|---|")
    for name in a.models.split(","):
        cells, warm = [], []
        for bf16 in (False, True):
            torch.manual_seed(0)
            net, opt_ctor, x, y, loss_fn = MODELS[name]()
            eager, twin = net, copy.deepcopy(net)
            opt_e, opt_c = opt_ctor(eager.parameters()), opt_ctor(twin.parameters())
            compiled = torch.compile(twin)
            first = step(compiled, opt_c, loss_fn, x, y, bf16)
            step(eager, opt_e, loss_fn, x, y, bf16)  # the eager warm-up (allocator, oneDNN caches)
            te, tc = [], []
            for _ in range(a.pairs):
                te.append(step(eager, opt_e, loss_fn, x, y, bf16))
                tc.append(step(compiled, opt_c, loss_fn, x, y, bf16))
            e, c = statistics.median(te), statistics.median(tc)
            cells += [f"{e:.1f}", f"{c:.1f} ({e / c:.2f}x)"]
            warm.append((first - c) / 1e3)
            print(f"  {name} {'bf16' if bf16 else 'f32'}: eager {e:.1f} ms, compiled {c:.1f} ms "
                  f"(eager / compiled {e / c:.2f}), first compiled step {first / 1e3:.1f} s", flush=True)
            torch._dynamo.reset()
        print(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | "
              f"{min(warm):.0f}–{max(warm):.0f} s |", flush=True)
    print(f"load after {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
