"""The paper's case study, reproduced with ProfileDNN's own tools.

Trains torchvision's RetinaNet (ResNeXt-50-FPN backbone, no downloaded weights, synthetic data,
264 classes) for a few iterations, as the baseline (fp32, NCHW, torchvision's focal loss,
torch.optim.SGD) or with the method applied *for the CPU it runs on*: ProfileDNN's focal loss
and fused SGD everywhere, frozen batch-norm folded into the convolutions
(`profilednn.nn.fold_frozen_batchnorm`); bf16 autocast (loss in f32) with channels-last only
where oneDNN has bf16 units (AVX512-BF16 or AMX; `--bf16 auto`, `--channels-last auto`, the defaults). On a CPU
without them oneDNN runs bf16 by converting through f32 (`jit_bf16:avx512_core`), measured
2.4-4.5x slower per convolution than f32 there, and `profilednn advise` says so
(`bf16-without-bf16-units`); channels-last alone in f32 was slower too on such a CPU (Xeon model
207, no bf16 units: `brg_conv_fwd:avx512_core` 1.69x slower than the blocked `jit:avx512_core`
convolutions, 256x256x3x3 weight reorders 4.2x slower). It prints what it chose and why, then
iteration times and losses.

    python python/examples/retinanet_case_study.py --variant baseline
    python python/examples/retinanet_case_study.py --variant optimized    # profilednn.optimize decides
    python python/examples/retinanet_case_study.py --variant manual       # the flags decide
    # with oneDNN's view of each run, and the comparison:
    profilednn record -o base.log -- python python/examples/retinanet_case_study.py --variant baseline
    profilednn record -o opt.log  -- python python/examples/retinanet_case_study.py --variant optimized
    profilednn diff base.log opt.log --ignore-dtype
"""

import argparse
import statistics
import time

import torch
import torchvision
from torchvision.models.detection import RetinaNet
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.feature_pyramid_network import LastLevelP6P7

import profilednn


def model(num_classes, size):
    """RetinaNet whose transform resizes to `size` x `size`: torchvision's GeneralizedRCNNTransform
    rescales every image to its min_size/max_size, so the images' own size alone does not set the
    resolution the model trains at (MLPerf and the paper use 800)."""
    backbone = resnet_fpn_backbone(
        backbone_name="resnext50_32x4d", weights=None, trainable_layers=3,
        returned_layers=[2, 3, 4], extra_blocks=LastLevelP6P7(256, 256))
    net = RetinaNet(backbone, num_classes=num_classes, min_size=size, max_size=size)
    assert tuple(net.transform.min_size) == (size,) and net.transform.max_size == size, \
        f"the model's transform resizes to {net.transform.min_size}/{net.transform.max_size}, not --size {size}"
    return net


def batch(n, size, num_classes, gen):
    images = [torch.rand(3, size, size, generator=gen) for _ in range(n)]
    targets = []
    for _ in range(n):
        k = 4
        xy = torch.rand(k, 2, generator=gen) * (size * 0.6)
        wh = torch.rand(k, 2, generator=gen) * (size * 0.3) + 16
        boxes = torch.cat([xy, xy + wh], dim=1)
        labels = torch.randint(1, num_classes, (k,), generator=gen)
        targets.append({"boxes": boxes, "labels": labels})
    return images, targets


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", choices=["baseline", "optimized", "manual"], default="baseline",
                    help="optimized: profilednn.optimize decides on this CPU (measured); manual: the changes "
                         "chosen by the flags below")
    ap.add_argument("--budget", type=float, default=400.0, help="profilednn.optimize's time budget (s)")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--size", type=int, default=320,
                    help="image side and the model's resolution (its transform's min_size = max_size)")
    ap.add_argument("--classes", type=int, default=264)
    ap.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                    help="bf16 autocast in the optimized variant: auto = only where it measures faster than f32 "
                         "here (profilednn.cpu.bf16_pays: bf16 units alone do not make it pay)")
    ap.add_argument("--channels-last", choices=["auto", "on", "off"], default="auto",
                    help="channels-last in the optimized variant: auto = together with bf16 (oneDNN's bf16 "
                         "kernels are built for it; in f32 its blocked NCHW kernels were faster, measured)")
    ap.add_argument("--fold-frozen-bn", choices=["on", "off"], default="on",
                    help="in the optimized variant, fold FrozenBatchNorm2d into the convolutions before "
                         "them (profilednn.nn.fold_frozen_batchnorm: one convolution with scaled weights "
                         "and a bias instead of two element-wise passes per layer)")
    ap.add_argument("--profile", action="store_true",
                    help="capture torch.profiler's trace too (run under `profilednn record --torch`)")
    a = ap.parse_args()
    torch.manual_seed(0)
    net = model(a.classes, a.size)
    net.train()
    optimized = a.variant == "manual"
    use_bf16 = use_cl = False
    if optimized:
        if a.bf16 == "auto":
            use_bf16, why = profilednn.cpu.bf16_pays()
        else:
            use_bf16, why = a.bf16 == "on", "as asked"
        print(f"bf16 autocast: {'on' if use_bf16 else 'off'} ({why}; --bf16 {a.bf16})", flush=True)
        use_cl = use_bf16 if a.channels_last == "auto" else a.channels_last == "on"
        print(f"channels-last: {'on' if use_cl else 'off'} (--channels-last {a.channels_last}: "
              f"{'with bf16' if a.channels_last == 'auto' else 'as asked'})", flush=True)
    if optimized:
        # The fused loss replaces torchvision's inside the classification head. It reads the
        # autocast bf16 logits as they are and computes in f32 (math and reduction), so the loss
        # is f32 without converting the logits first: an `inputs.float()` here showed up in the
        # PyTorch view as aten::to + ToCopyBackward0, 36 ms per iteration.
        import torchvision.models.detection.retinanet as rn

        def loss_f32(inputs, targets, **kw):
            return profilednn.ops.sigmoid_focal_loss(inputs, targets, **kw)

        rn.sigmoid_focal_loss = loss_f32
        if a.fold_frozen_bn == "on":
            # Checked on a small image: outputs of the folded and unfolded backbone must agree.
            probe = torch.rand(1, 3, 64, 64)
            pairs = profilednn.nn.fold_frozen_batchnorm(net.backbone.body, example_inputs=(probe,))
            print(f"frozen batch-norm: {len(pairs)} conv -> FrozenBatchNorm2d pairs folded", flush=True)
        if use_cl:
            net = net.to(memory_format=torch.channels_last)
        opt = profilednn.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.01, momentum=0.9, weight_decay=1e-4)
    else:
        opt = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.01, momentum=0.9,
                              weight_decay=1e-4, foreach=False)
    if a.variant == "optimized":
        # One call: every change ProfileDNN knows is projected, then measured against the step
        # as written on this CPU, and kept only when it is faster.
        opt = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.01, momentum=0.9,
                              weight_decay=1e-4, foreach=False)
        example = batch(a.batch, a.size, a.classes, torch.Generator().manual_seed(99))
        net, opt, report = profilednn.optimize(net, opt, example=(example, None),
                                               loss_fn=lambda losses, _: sum(v.float() for v in losses.values()),
                                               budget_s=a.budget, steps=3)
        print(report, flush=True)
    # The loss computation gets its own range in the profiler's trace ("loss" -> loss phase).
    from profilednn._optimize import OptimizedModule

    inner = net.module if isinstance(net, OptimizedModule) else net
    compute_loss = inner.compute_loss

    def annotated_loss(*args, **kw):
        with torch.profiler.record_function("loss"):
            return compute_loss(*args, **kw)

    inner.compute_loss = annotated_loss
    gen = torch.Generator().manual_seed(1)
    times = []
    prof = profilednn.profile() if a.profile else None
    if prof:
        prof.__enter__()  # prints the first iteration marker
    for it in range(a.iterations):
        if not prof:
            print(f"profilednn,iteration,{it}", flush=True)
        start = time.perf_counter()
        with torch.profiler.record_function("data"):
            images, targets = batch(a.batch, a.size, a.classes, gen)
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_bf16):
            losses = net(images, targets)
        loss = sum(v.float() for v in losses.values())
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
        if prof:
            prof.step()
        print(f"iteration {it}: {times[-1]:.2f} s, loss {loss.item():.4f} "
              f"(classification {losses['classification'].item():.4f}, regression {losses['bbox_regression'].item():.4f})",
              flush=True)
    if prof:
        prof.__exit__(None, None, None)
    steady = times[1:] or times
    print(f"{a.variant}{' (bf16)' if use_bf16 else ''}: median iteration {statistics.median(steady):.2f} s over {len(steady)} steady iterations "
          f"(torch {torch.__version__}, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
