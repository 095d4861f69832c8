"""profilednn's kernels against the real thing: torchvision's sigmoid_focal_loss and torch.optim.

Run: python -m unittest discover -s python/tests (needs torch, torchvision and the built package).
"""

import copy
import unittest

import torch
import torchvision

import profilednn
from profilednn.ops import sigmoid_focal_loss, sigmoid_focal_loss_and_grad


def reference(x, t, alpha, gamma, reduction):
    """torchvision in float64, with autograd for the gradient."""
    x64 = x.detach().double().requires_grad_(True)
    loss = torchvision.ops.sigmoid_focal_loss(x64, t.double(), alpha=alpha, gamma=gamma, reduction=reduction)
    g = torch.autograd.grad(loss.sum(), x64)[0] if x64.numel() else torch.zeros_like(x64)
    return loss.detach(), g


def assert_close(test, ours, ref, rtol, what):
    ours = ours.double()
    if ref.numel() == 0:
        test.assertEqual(ours.numel(), 0, what)
        return
    scale = ref.abs().max().item()
    err = (ours - ref).abs()
    tol = rtol * ref.abs() + rtol * max(scale, 1e-30)
    bad = (err > tol).nonzero()
    test.assertEqual(len(bad), 0, f"{what}: first bad {bad[:3].tolist()} ours {ours.flatten()[:4].tolist()} ref {ref.flatten()[:4].tolist()}")


class FocalLoss(unittest.TestCase):
    def inputs(self, shape, span=10.0, soft=True, seed=0):
        g = torch.Generator().manual_seed(seed)
        x = (torch.rand(shape, generator=g) * 2 - 1) * span
        t = torch.rand(shape, generator=g) if soft else (torch.rand(shape, generator=g) < 0.1).float()
        flat = x.view(-1)
        for i, v in enumerate([100.0, -100.0, 0.0, 30.0, -30.0]):
            if i < flat.numel():
                flat[i] = v
        return x, t

    def test_values_and_gradients_equal_torchvision_f32(self):
        for shape in [(1,), (3, 17), (2, 99, 13), (1000,), (0, 5)]:
            for alpha, gamma in [(0.25, 2.0), (-1.0, 0.0), (0.5, 1.0), (0.25, 1.5)]:
                for reduction in ["none", "mean", "sum"]:
                    if reduction == "mean" and 0 in shape:
                        continue
                    for soft in [True, False]:
                        x, t = self.inputs(shape, soft=soft, seed=len(shape))
                        xr = x.clone().requires_grad_(True)
                        loss = sigmoid_focal_loss(xr, t, alpha=alpha, gamma=gamma, reduction=reduction)
                        ref_loss, ref_grad = reference(x, t, alpha, gamma, reduction)
                        what = f"{shape} a={alpha} g={gamma} {reduction} soft={soft}"
                        assert_close(self, loss.detach(), ref_loss, 1e-5, "loss " + what)
                        loss.sum().backward()
                        assert_close(self, xr.grad, ref_grad, 1e-5, "grad " + what)

    def test_scaled_and_repeated_backward(self):
        # The gradient computed during forward is scaled by the incoming gradient, and a second
        # backward through a retained graph recomputes it.
        x, t = self.inputs((7, 301), seed=3)
        _, ref_grad = reference(x, t, 0.25, 2.0, "mean")
        xr = x.clone().requires_grad_(True)
        loss = sigmoid_focal_loss(xr, t, reduction="mean")
        (loss * 3.0).backward(retain_graph=True)
        assert_close(self, xr.grad, 3.0 * ref_grad, 1e-5, "scaled grad")
        xr.grad = None
        loss.backward()
        assert_close(self, xr.grad, ref_grad, 1e-5, "second backward")
        with torch.no_grad():
            assert_close(self, sigmoid_focal_loss(x, t, reduction="mean"), loss.detach(), 1e-6, "no_grad loss")

    def test_backward_makes_no_extra_pass_over_the_logits(self):
        # Issue 51: through autograd the loss took 3.5x its fused call, because backward
        # materialized a logits-sized zero gradient for the op's second output and cloned the
        # gradient for a leaf. The fused pass computed the gradient already: backward must not
        # create another logits-sized tensor (no zeros, fill, clone or copy of that size).
        from torch.utils._python_dispatch import TorchDispatchMode

        class Log(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                # Views and detach alias their input (`Tensor(a)` in the schema): no pass.
                aliases = any(r.alias_info is not None for r in func._schema.returns)
                for o in (out if isinstance(out, (tuple, list)) else (out,)):
                    if isinstance(o, torch.Tensor) and not aliases:
                        self.ops.append((func.overloadpacket.__name__, o.numel()))
                return out

        for dtype in (torch.float32, torch.bfloat16):
            for leaf in (True, False):
                x, t = self.inputs((64, 300), seed=11)
                _, ref_grad = reference(x, t, 0.25, 2.0, "sum")
                xr = x.to(dtype).requires_grad_(True)
                # Not a leaf: a view of one (its backward aliases the gradient, copying nothing).
                logits = xr if leaf else xr.view(64, 300)
                loss = sigmoid_focal_loss(logits, t.to(dtype), reduction="sum")
                with Log() as log:
                    loss.backward()
                big = [op for op, n in log.ops if n == x.numel()]
                self.assertEqual(big, [], f"{dtype} leaf={leaf}: logits-sized tensors made in backward")
                tol = 1e-5 if dtype == torch.float32 else 2e-2
                assert_close(self, xr.grad.float(), ref_grad, tol, f"grad {dtype} leaf={leaf}")

    def test_a_retained_graph_after_the_handed_out_gradient_accumulates_right(self):
        # The first backward (seeded with 1) hands the saved gradient out as the leaf's .grad
        # with no copy; a retained graph's next backwards must not read it back (it is .grad
        # now, accumulated into), nor be hurt by zero_grad in place.
        x, t = self.inputs((64, 300), seed=13)
        _, ref_grad = reference(x, t, 0.25, 2.0, "mean")
        xr = x.clone().requires_grad_(True)
        loss = sigmoid_focal_loss(xr, t, reduction="mean")
        loss.backward(retain_graph=True)
        loss.backward(retain_graph=True)
        assert_close(self, xr.grad, 2.0 * ref_grad, 1e-5, "two backwards")
        xr.grad.zero_()
        loss.backward()
        assert_close(self, xr.grad, ref_grad, 1e-5, "after zero_grad in place")

    def test_gradient_buffers_are_reused_only_when_free(self):
        # Large enough (>= 1 M elements) for the buffer pool.
        x1, t = self.inputs((1100, 1000), seed=5)
        x2, _ = self.inputs((1100, 1000), seed=6)
        _, g1 = sigmoid_focal_loss_and_grad(x1, t)
        keep = g1.clone()
        _, g2 = sigmoid_focal_loss_and_grad(x2, t)  # g1 is held: must not be overwritten
        self.assertNotEqual(g1.data_ptr(), g2.data_ptr())
        self.assertTrue(torch.equal(g1, keep))
        # Leaf gradients (autograd keeps them as .grad) are not overwritten by later steps.
        a = x1.clone().requires_grad_(True)
        sigmoid_focal_loss(a, t, reduction="mean").backward()
        a_grad = a.grad.clone()
        b = x2.clone().requires_grad_(True)
        sigmoid_focal_loss(b, t, reduction="mean").backward()
        self.assertTrue(torch.equal(a.grad, a_grad))
        self.assertFalse(torch.equal(a.grad, b.grad))
        # A dropped gradient's buffer is used again (no new logits-sized allocation).
        ptr = g2.data_ptr()
        del g2
        _, g3 = sigmoid_focal_loss_and_grad(x2, t)
        self.assertEqual(g3.data_ptr(), ptr)
        _, ref = reference(x2, t, 0.25, 2.0, "mean")
        assert_close(self, g3, ref, 1e-5, "reused buffer")

    def test_bf16_within_one_rounding(self):
        x, t = self.inputs((64, 91), span=8.0)
        xb = x.bfloat16()
        xr = xb.clone().requires_grad_(True)
        loss = sigmoid_focal_loss(xr, t, reduction="none")
        self.assertEqual(loss.dtype, torch.bfloat16)
        # f32 targets are read as f32 (not rounded to bf16 first).
        ref_loss, ref_grad = reference(xb.float(), t, 0.25, 2.0, "none")
        assert_close(self, loss.detach().float(), ref_loss, 2 ** -7, "bf16 loss")
        loss.float().sum().backward()
        assert_close(self, xr.grad.float(), ref_grad, 2 ** -7, "bf16 grad")

    def test_bf16_training_step_with_dense_f32_bf16_and_class_targets(self):
        # The reduced pass the training step takes (the AVX-512 loop where the CPU has it,
        # whole-line bf16 stores, non-temporal above 4 MB): large, and misaligned by one
        # element, against torchvision in float64 on the same bf16 logits.
        rows, classes = 9001, 264
        x, _ = self.inputs((rows * classes + 1,), span=12.0, seed=11)
        xb = x.bfloat16()[1:].view(rows, classes)
        labels = torch.arange(rows) * 31 % 300  # >= classes: background rows
        dense = torch.zeros(rows, classes)
        m = labels < classes
        dense[m.nonzero().squeeze(1), labels[m]] = 1.0
        ref_loss, ref_grad = reference(xb.float(), dense, 0.25, 2.0, "mean")
        for name, t in [("f32 dense", dense), ("bf16 dense", dense.bfloat16()), ("class indices", labels)]:
            xr = xb.clone().requires_grad_(True)
            loss = sigmoid_focal_loss(xr, t, reduction="mean")
            loss.backward()
            self.assertLess(abs(loss.item() - ref_loss.item()), 1e-5 * ref_loss.item(), name)
            self.assertEqual(xr.grad.dtype, torch.bfloat16)
            assert_close(self, xr.grad.float(), ref_grad, 2 ** -8, "bf16 grad " + name)

    def test_class_index_targets_and_fused_step(self):
        x, _ = self.inputs((50, 21))
        labels = torch.arange(50) % 23  # 21, 22: background rows
        dense = torch.zeros(50, 21)
        for r, l in enumerate(labels.tolist()):
            if l < 21:
                dense[r, l] = 1.0
        a = sigmoid_focal_loss(x, labels, reduction="sum")
        b = torchvision.ops.sigmoid_focal_loss(x.double(), dense.double(), reduction="sum")
        self.assertLess(abs(a.item() - b.item()), 1e-5 * b.item())
        buf = torch.empty_like(x)
        loss, grad = sigmoid_focal_loss_and_grad(x, dense, reduction="mean", grad=buf)
        self.assertEqual(grad.data_ptr(), buf.data_ptr())
        ref_loss, ref_grad = reference(x, dense, 0.25, 2.0, "mean")
        self.assertLess(abs(loss.item() - ref_loss.item()), 1e-5 * ref_loss.item())
        assert_close(self, grad, ref_grad, 1e-5, "fused grad")

    def test_class_indices_follow_torchvisions_matcher_through_the_retinanet_head(self):
        # torchvision's own RetinaNet loss code path: its Matcher gives -1 for background
        # anchors (they count, all-zero target) and -2 between the thresholds (ignored). The
        # class-index form must give the same loss with the matched labels as they come; it
        # used to ignore -1 and dropped ~99 % of the loss.
        from torchvision.models.detection._utils import Matcher
        from torchvision.models.detection.retinanet import RetinaNetClassificationHead
        head = RetinaNetClassificationHead(in_channels=8, num_anchors=1, num_classes=21)
        g = torch.Generator().manual_seed(5)
        images, anchors, classes = 2, 600, 21
        logits = torch.randn(images, anchors, classes, generator=g) * 3
        targets, matched = [], []
        for _ in range(images):
            boxes = 4
            targets.append({"labels": torch.randint(0, classes, (boxes,), generator=g)})
            m = torch.randint(0, boxes, (anchors,), generator=g)
            kind = torch.rand(anchors, generator=g)
            m[kind < 0.8] = Matcher.BELOW_LOW_THRESHOLD
            m[(kind >= 0.8) & (kind < 0.9)] = Matcher.BETWEEN_THRESHOLDS
            matched.append(m)
        ref = head.compute_loss(targets, {"cls_logits": logits.double()}, matched)
        losses = []
        for t, x, m in zip(targets, logits, matched):
            # Foreground anchors get their box's class; the Matcher's -1 and -2 stay as they are.
            labels = torch.where(m >= 0, t["labels"][m.clamp(min=0)], m)
            fg = int((m >= 0).sum())
            losses.append(sigmoid_focal_loss(x, labels, reduction="sum") / max(1, fg))
        ours = sum(losses) / images
        self.assertLess(abs(ours.item() - ref.item()), 1e-5 * ref.item(), (ours.item(), ref.item()))
        # With -1 read as "ignore", the background anchors (80 %) would drop out.
        wrong = sum(sigmoid_focal_loss(x, torch.where(m >= 0, t["labels"][m.clamp(min=0)], m),
                                       reduction="sum", ignore_index=-1) / max(1, int((m >= 0).sum()))
                    for t, x, m in zip(targets, logits, matched)) / images
        self.assertLess(wrong.item(), 0.5 * ref.item())

    def test_double_backward_is_refused_and_retained_graphs_keep_their_values(self):
        x = torch.randn(6, 5, requires_grad=True)
        t = (torch.rand(6, 5) < 0.3).float()
        loss = sigmoid_focal_loss(x, t, reduction="mean")
        (g,) = torch.autograd.grad(loss, x, create_graph=False, retain_graph=True)
        with self.assertRaisesRegex(RuntimeError, "double backward"):
            torch.autograd.grad(loss, x, create_graph=True, retain_graph=True)
        # The logits are a leaf: its .grad must not be the saved gradient itself, or the
        # accumulations of a retained graph's next backwards would write into it.
        for i in range(3):
            loss.backward(retain_graph=True)
            torch.testing.assert_close(x.grad, g * (i + 1))
        x.grad.zero_()
        loss.backward()
        torch.testing.assert_close(x.grad, g)

    def test_clear_errors(self):
        x = torch.randn(4, 5)
        # What the kernels do not take is torchvision's formula (the drop-in takes what it takes).
        t64 = torch.rand(4, 5).double()
        torch.testing.assert_close(sigmoid_focal_loss(x.double(), t64, reduction="sum"),
                                   torchvision.ops.sigmoid_focal_loss(x.double(), t64, reduction="sum"))
        soft = torch.rand(4, 5, requires_grad=True)
        for fn in (sigmoid_focal_loss, torchvision.ops.sigmoid_focal_loss):
            fn(x, soft, reduction="mean").backward()
        self.assertIsNotNone(soft.grad, "a gradient for soft targets, as torchvision gives")
        # A transposed view is taken as torchvision takes it (a drop-in), copied once.
        t = torch.rand(5, 4)
        torch.testing.assert_close(sigmoid_focal_loss(x.t(), t, reduction="sum"),
                                   sigmoid_focal_loss(x.t().contiguous(), t, reduction="sum"))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            sigmoid_focal_loss_and_grad(x.t(), t)
        with self.assertRaisesRegex(ValueError, "shape"):
            sigmoid_focal_loss(x, torch.rand(4, 6))
        with self.assertRaisesRegex(ValueError, "reduction"):
            sigmoid_focal_loss(x, torch.rand(4, 5), reduction="avg")


def params(seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter((torch.rand(s, generator=g) * 2 - 1).to(dtype)) for s in [(1,), (17,), (8, 33), (3, 5, 7)]]


def run(opt_cls, kwargs, steps=5, dtype=torch.float32, seed=0):
    ps = params(seed, dtype)
    opt = opt_cls(ps, **kwargs)
    g = torch.Generator().manual_seed(100 + seed)
    for _ in range(steps):
        for p in ps:
            p.grad = ((torch.rand(p.shape, generator=g) * 2 - 1) * 0.1).to(dtype)
        opt.step()
    return ps, opt


class Optimizers(unittest.TestCase):
    def check(self, ours, theirs, rtol=2e-6, atol=1e-7):
        for a, b in zip(ours, theirs):
            torch.testing.assert_close(a.detach(), b.detach(), rtol=rtol, atol=atol)

    def test_sgd_equals_torch(self):
        for kw in [dict(lr=0.1), dict(lr=0.1, momentum=0.9, weight_decay=1e-4),
                   dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.05, momentum=0.9, dampening=0.1, maximize=True)]:
            ours, _ = run(profilednn.optim.SGD, kw)
            theirs, _ = run(torch.optim.SGD, dict(kw, foreach=False))
            self.check(ours, theirs)

    def test_adam_and_adamw_equal_torch(self):
        for ours_cls, torch_cls in [(profilednn.optim.Adam, torch.optim.Adam), (profilednn.optim.AdamW, torch.optim.AdamW)]:
            for kw in [dict(lr=1e-2), dict(lr=1e-2, weight_decay=0.1, amsgrad=True), dict(lr=1e-2, maximize=True)]:
                ours, _ = run(ours_cls, kw)
                theirs, _ = run(torch_cls, dict(kw, foreach=False))
                self.check(ours, theirs)

    def test_lamb_equals_the_paper(self):
        ours, _ = run(profilednn.optim.LAMB, dict(lr=1e-2, weight_decay=0.01), steps=3)
        ps = params(0, torch.float64)
        state = [dict(m=torch.zeros_like(p), v=torch.zeros_like(p)) for p in ps]
        g = torch.Generator().manual_seed(100)
        for step in range(1, 4):
            for p, s in zip(ps, state):
                grad = ((torch.rand(p.shape, generator=g) * 2 - 1) * 0.1).to(torch.float32).double()
                s["m"] = 0.9 * s["m"] + 0.1 * grad
                s["v"] = 0.999 * s["v"] + 0.001 * grad * grad
                u = (s["m"] / (1 - 0.9 ** step)) / ((s["v"] / (1 - 0.999 ** step)).sqrt() + 1e-6) + 0.01 * p.data
                ratio = (p.data.norm() / u.norm()).item() if p.data.norm() > 0 and u.norm() > 0 else 1.0
                p.data -= 1e-2 * ratio * u
        self.check(ours, [p.float() for p in ps], rtol=1e-5, atol=1e-6)

    def test_state_dict_round_trips(self):
        ps, opt = run(profilednn.optim.AdamW, dict(lr=1e-2), steps=2)
        saved = copy.deepcopy(opt.state_dict())
        ps2 = [torch.nn.Parameter(p.detach().clone()) for p in ps]
        opt2 = profilednn.optim.AdamW(ps2, lr=1e-2)
        opt2.load_state_dict(saved)
        for p, q in zip(ps, ps2):
            grad = torch.full_like(p, 0.05)
            p.grad, q.grad = grad, grad.clone()
        opt.step()
        opt2.step()
        self.check(ps, ps2, rtol=0, atol=0)

    def test_bf16_parameters_with_master(self):
        ours, opt = run(profilednn.optim.AdamW, dict(lr=1e-2), dtype=torch.bfloat16)
        ref, _ = run(profilednn.optim.AdamW, dict(lr=1e-2), dtype=torch.float32)
        for p, r in zip(ours, ref):
            self.assertEqual(p.dtype, torch.bfloat16)
            # The bf16 parameter is the rounding of its f32 master.
            self.assertTrue(torch.equal(p.detach(), opt.state[p]["master"].bfloat16()))


    def test_bf16_split_master_is_torch_optim_on_an_f32_copy(self):
        # master="split": state keeps only the f32 master's bottom 16 bits; the bf16 parameter is
        # its top 16. The master rebuilt from both must be torch.optim's f32 parameter when
        # torch.optim runs on an f32 copy with the same (bf16-valued) gradients. A parameter
        # rounded to nearest instead of truncated would be off by up to a bf16 ulp (2^-8).
        cases = [(profilednn.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                 (profilednn.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)),
                 (profilednn.optim.AdamW, torch.optim.AdamW, dict(lr=1e-2)),
                 # Not Adam's coupled weight decay here: with bf16 gradients g + wd·p cancels
                 # to a few ulps on some elements, and Adam's first steps (update ≈ lr·sign)
                 # turn torch's and our different roundings of it into lr-sized differences.
                 (profilednn.optim.Adam, torch.optim.Adam, dict(lr=1e-2, betas=(0.8, 0.99), maximize=True))]
        for ours_cls, torch_cls, kw in cases:
            ps = params(3, torch.bfloat16)
            ref = [torch.nn.Parameter(p.detach().float()) for p in ps]
            opt = ours_cls(ps, master="split", **kw)
            topt = torch_cls(ref, foreach=False, **kw)
            g = torch.Generator().manual_seed(7)
            for _ in range(4):
                for p, r in zip(ps, ref):
                    p.grad = ((torch.rand(p.shape, generator=g) * 2 - 1) * 0.1).bfloat16()
                    r.grad = p.grad.float()
                opt.step()
                topt.step()
            for p, r in zip(ps, ref):
                self.assertEqual(p.dtype, torch.bfloat16)
                low = opt.state[p]["master_low"]
                self.assertEqual(low.dtype, torch.int16)
                self.assertNotIn("master", opt.state[p])
                bits = (p.detach().view(torch.int16).int() << 16) | (low.int() & 0xFFFF)
                master = bits.view(torch.float32)
                torch.testing.assert_close(master, r.detach(), rtol=2e-6, atol=1e-7, msg=f"{ours_cls.__name__} {kw}")
        with self.assertRaisesRegex(ValueError, "master"):
            profilednn.optim.SGD(params(0), lr=0.1, master="bf16")

    def test_bf16_state_is_torch_fused_layout(self):
        # master="none": bf16 parameter and bf16 state, no master, as torch's fused=True keeps
        # them. Same steps as torch's fused optimizer on the same bf16 parameters and gradients:
        # within one bf16 rounding per step (torch's vector loop may use FMAs, ours does not).
        cases = [(profilednn.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                 (profilednn.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)),
                 (profilednn.optim.AdamW, torch.optim.AdamW, dict(lr=1e-2))]
        for ours_cls, torch_cls, kw in cases:
            ps = params(3, torch.bfloat16)
            ref = [torch.nn.Parameter(p.detach().clone()) for p in ps]
            opt = ours_cls(ps, master="none", **kw)
            topt = torch_cls(ref, fused=True, **kw)
            g = torch.Generator().manual_seed(11)
            for step in range(3):
                for p, r in zip(ps, ref):
                    p.grad = ((torch.rand(p.shape, generator=g) * 2 - 1) * 0.1).bfloat16()
                    r.grad = p.grad.clone()
                opt.step()
                topt.step()
                for p, r in zip(ps, ref):
                    self.assertEqual(p.dtype, torch.bfloat16)
                    for k, v in opt.state[p].items():
                        if k != "step":
                            self.assertEqual(v.dtype, torch.bfloat16, k)
                            torch.testing.assert_close(v.float(), topt.state[r][k].float(), rtol=2 ** -7 * (step + 1),
                                                       atol=1e-6, msg=f"{ours_cls.__name__} {kw} {k} step {step}")
                    torch.testing.assert_close(p.detach().float(), r.detach().float(), rtol=2 ** -7 * (step + 1),
                                               atol=1e-6, msg=f"{ours_cls.__name__} {kw} step {step}")
        with self.assertRaisesRegex(ValueError, "amsgrad"):
            profilednn.optim.AdamW(params(0), amsgrad=True, master="none")
        # amsgrad added later through a parameter group: refused before any state changes.
        opt = profilednn.optim.AdamW(params(0, torch.bfloat16), master="none")
        opt.add_param_group(dict(params=params(1, torch.bfloat16), amsgrad=True))
        for group in opt.param_groups:
            for p in group["params"]:
                p.grad = torch.full_like(p, 0.01)
        with self.assertRaisesRegex(ValueError, "amsgrad"):
            opt.step()
        self.assertEqual(len(opt.state), 0)

    def test_state_of_another_layout_is_converted_not_reinterpreted(self):
        # torch's load_state_dict casts floating state to the parameter's dtype, and a group's
        # `master` may change between steps: the kernels must get the dtype they read (a bf16
        # buffer handed to the f32 kernel would be written past its end).
        def grads(ps, seed):
            g = torch.Generator().manual_seed(seed)
            for p in ps:
                p.grad = ((torch.rand(p.shape, generator=g) * 2 - 1) * 0.1).bfloat16()

        # torch fused bf16 -> ours, f32 master: the moments come back as bf16 and are widened.
        ps = params(5, torch.bfloat16)
        topt = torch.optim.AdamW(ps, lr=1e-2, fused=True)
        grads(ps, 1)
        topt.step()
        opt = profilednn.optim.AdamW(ps, lr=1e-2)
        opt.load_state_dict(topt.state_dict())
        grads(ps, 2)
        opt.step()
        for p in ps:
            self.assertEqual(opt.state[p]["exp_avg"].dtype, torch.float32)
            self.assertEqual(opt.state[p]["master"].dtype, torch.float32)
            self.assertTrue(torch.isfinite(p.float()).all())
        # Ours with an f32 master, saved and loaded: torch casts the master to bf16.
        opt2 = profilednn.optim.AdamW(ps, lr=1e-2)
        opt2.load_state_dict(opt.state_dict())
        self.assertEqual(opt2.state[ps[0]]["master"].dtype, torch.bfloat16)
        grads(ps, 3)
        opt2.step()
        self.assertEqual(opt2.state[ps[0]]["master"].dtype, torch.float32)
        # Switching the group to torch's layout: the master is dropped, the moments narrowed.
        opt2.param_groups[0]["master"] = "none"
        grads(ps, 4)
        opt2.step()
        for p in ps:
            self.assertNotIn("master", opt2.state[p])
            self.assertEqual(opt2.state[p]["exp_avg_sq"].dtype, torch.bfloat16)
        # And back to split, with SGD's buffer too.
        sgd = profilednn.optim.SGD(ps, lr=0.1, momentum=0.9, master="none")
        grads(ps, 5)
        sgd.step()
        self.assertEqual(sgd.state[ps[1]]["momentum_buffer"].dtype, torch.bfloat16)
        sgd.param_groups[0]["master"] = "split"
        grads(ps, 6)
        sgd.step()
        self.assertEqual(sgd.state[ps[1]]["momentum_buffer"].dtype, torch.float32)
        self.assertIn("master_low", sgd.state[ps[1]])
        with self.assertRaisesRegex(ValueError, "master"):
            profilednn.optim.LAMB(params(0), master="none")


class Training(unittest.TestCase):
    def test_same_loss_curve_as_the_reference(self):
        def train(loss_fn, opt_cls):
            torch.manual_seed(0)
            model = torch.nn.Linear(32, 10)
            opt = opt_cls(model.parameters(), lr=0.05, momentum=0.9)
            x = torch.randn(256, 32)
            y = torch.nn.functional.one_hot(torch.randint(0, 10, (256,)), 10).float()
            losses = []
            for _ in range(30):
                opt.zero_grad()
                loss = loss_fn(model(x), y, reduction="mean")
                loss.backward()
                opt.step()
                losses.append(loss.item())
            return losses

        ours = train(sigmoid_focal_loss, profilednn.optim.SGD)
        ref = train(torchvision.ops.sigmoid_focal_loss, lambda p, **kw: torch.optim.SGD(p, foreach=False, **kw))
        for a, b in zip(ours, ref):
            self.assertLess(abs(a - b), 1e-5 * abs(b) + 1e-7, f"{ours} vs {ref}")
        self.assertLess(ours[-1], ours[0])


if __name__ == "__main__":
    unittest.main()


class ChannelsLast(unittest.TestCase):
    def test_channels_last_parameters(self):
        def step(cls, **kw):
            torch.manual_seed(0)
            conv = torch.nn.Conv2d(8, 16, 3).to(memory_format=torch.channels_last)
            opt = cls(conv.parameters(), lr=0.1, momentum=0.9, **kw)
            for _ in range(3):
                opt.zero_grad()
                conv(torch.rand(2, 8, 9, 9).contiguous(memory_format=torch.channels_last)).square().mean().backward()
                opt.step()
            return conv.weight.detach()

        ours = step(profilednn.optim.SGD)
        ref = step(torch.optim.SGD, foreach=False)
        self.assertTrue(ours.is_contiguous(memory_format=torch.channels_last))
        torch.testing.assert_close(ours, ref, rtol=2e-6, atol=1e-7)


class Layouts(unittest.TestCase):
    """Weights whose gradient or state comes in another stride pattern of the same layout, or in
    a layout other than row-major (issue 51: ConvNeXt's depthwise weights were refused)."""

    def models(self):
        torch.manual_seed(0)
        depthwise = torch.nn.Conv2d(16, 16, 7, padding=3, groups=16)  # weight [16, 1, 7, 7]
        lin = torch.nn.Linear(12, 8)
        lin.weight = torch.nn.Parameter(torch.randn(12, 8).t())  # a transposed [8, 12] weight
        # A channels-last input gives the contiguous depthwise weight a gradient with strides
        # [49, 1, 7, 1] (ConvNeXt's case: the permutes around its LayerNorm do the same).
        return [("depthwise", depthwise, lambda: torch.rand(2, 16, 9, 9).contiguous(memory_format=torch.channels_last)),
                ("depthwise channels-last", copy.deepcopy(depthwise).to(memory_format=torch.channels_last),
                 lambda: torch.rand(2, 16, 9, 9).contiguous(memory_format=torch.channels_last)),
                ("transposed conv", torch.nn.ConvTranspose2d(6, 4, 3, stride=2), lambda: torch.rand(2, 6, 5, 5)),
                ("transposed linear", lin, lambda: torch.rand(5, 12))]

    def test_same_steps_as_torch_optim(self):
        for name, model, x in self.models():
            for ours, theirs, kw in ((profilednn.optim.SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
                                     (profilednn.optim.AdamW, torch.optim.AdamW, dict(lr=1e-2))):
                a, b = copy.deepcopy(model), copy.deepcopy(model)
                oa, ob = ours(a.parameters(), **kw), theirs(b.parameters(), foreach=False, **kw)
                torch.manual_seed(1)
                inputs = [x() for _ in range(3)]
                grad_strides = []
                for m, opt in ((a, oa), (b, ob)):
                    for i in inputs:
                        opt.zero_grad()
                        m(i).square().mean().backward()
                        grad_strides.append(m.weight.grad.stride())
                        opt.step()
                if name == "depthwise":
                    # The case itself: a gradient whose size-1 dimension's stride differs.
                    self.assertEqual(grad_strides[0], (49, 1, 7, 1))
                    self.assertEqual(a.weight.stride(), (49, 49, 7, 1))
                for p, q in zip(a.parameters(), b.parameters()):
                    self.assertEqual(p.stride(), q.stride(), name)
                    torch.testing.assert_close(p, q, rtol=2e-6, atol=1e-7, msg=f"{name} {ours.__name__}")


class ThreadPool(unittest.TestCase):
    def test_openmp_team_and_std_threads_give_the_same_bits(self):
        # The kernels run on PyTorch's own OpenMP team when PyTorch uses libgomp; results must
        # not depend on which pool ran them.
        from profilednn import _native
        from profilednn._common import torch_libgomp

        gomp = torch_libgomp()
        if "OpenMP" in torch.__config__.parallel_info() and gomp:
            self.assertTrue(_native.openmp(), "PyTorch runs on libgomp: the kernels should share its team")
        old = torch.get_num_threads()
        torch.set_num_threads(2)
        try:
            x, t = FocalLoss().inputs((1100, 1000), seed=8)

            def run():
                torch.manual_seed(0)
                ps = [torch.nn.Parameter(torch.rand(n)) for n in (300_000, 70_000, 5)]
                for p in ps:
                    p.grad = torch.rand_like(p)
                opt = profilednn.optim.AdamW(ps, lr=1e-2)
                for _ in range(3):
                    opt.step()
                loss, g = sigmoid_focal_loss_and_grad(x, t)
                return [p.detach().clone() for p in ps], loss, g.clone()

            results = []
            for path in ([gomp, None] if gomp else [None]):
                _native.use_openmp(path)
                results.append(run())
        finally:
            if gomp:
                _native.use_openmp(gomp)
            torch.set_num_threads(old)
        for other in results[1:]:
            for a, b in zip(results[0][0], other[0]):
                self.assertTrue(torch.equal(a, b))
            self.assertEqual(results[0][1].item(), other[1].item())
            self.assertTrue(torch.equal(results[0][2], other[2]))


class Capture(unittest.TestCase):
    def test_schedule_skips_steps_and_a_compiled_model_is_traced_without_its_compiling_step(self):
        # Every step's marker still reaches the log; the trace holds only the steps asked for,
        # gzip-compressed by its name. A compiled model (`model=`) leaves out its first step
        # (its compilation: a 4 GB trace on a 2-layer GPT) and Python stacks by default.
        import contextlib
        import gzip
        import io
        import json
        import os
        import tempfile

        def run(net, **kw):
            path = os.path.join(tempfile.mkdtemp(), "t.trace.json.gz")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                with profilednn.profile(trace=path, **kw) as prof:
                    for _ in range(4):
                        net(torch.rand(2, 8)).sum().backward()
                        prof.step()
            markers = [l for l in out.getvalue().splitlines() if l.startswith("profilednn,iteration,")]
            with gzip.open(path) as f:
                trace = json.load(f)
            ranges = sorted(int(e["name"].split("#")[1]) for e in trace["traceEvents"]
                            if e.get("name", "").startswith("profilednn.iteration#"))
            stacks = any(e.get("cat") == "python_function" for e in trace["traceEvents"])
            return len(markers), ranges, stacks

        lin = torch.nn.Linear(8, 4)
        self.assertEqual(run(lin), (5, [0, 1, 2, 3, 4], True))
        self.assertEqual(run(lin, skip=2), (5, [2, 3, 4], True))
        self.assertEqual(run(lin, skip=1, active=1), (5, [1], True))
        compiled = torch.compile(lin)
        n, ranges, stacks = run(compiled, model=compiled)
        self.assertEqual((n, ranges[0], stacks), (5, 1, False))
        with self.assertRaises(ValueError):
            profilednn.profile(skip=-1)
        # A run no longer than `skip` traces nothing, and says so instead of an empty trace.
        path = os.path.join(tempfile.mkdtemp(), "none.trace.json.gz")
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            with profilednn.profile(trace=path, skip=2) as prof:
                for _ in range(2):
                    lin(torch.rand(2, 8)).sum().backward()
                    prof.step()
        self.assertIn("no step was traced", err.getvalue())
        self.assertFalse(os.path.exists(path))

    def test_profile_writes_a_trace_and_marks_iterations(self):
        import contextlib
        import io
        import json
        import os
        import tempfile

        path = os.path.join(tempfile.mkdtemp(), "t.trace.json")
        out = io.StringIO()
        lin = torch.nn.Linear(8, 4)
        with contextlib.redirect_stdout(out):
            with profilednn.profile(trace=path) as prof:
                for _ in range(3):
                    lin(torch.rand(2, 8)).sum().backward()
                    prof.step()
        markers = [l for l in out.getvalue().splitlines() if l.startswith("profilednn,iteration,")]
        self.assertEqual(markers, [f"profilednn,iteration,{i}" for i in range(4)])
        with open(path) as f:
            trace = json.load(f)
        self.assertIn("baseTimeNanoseconds", trace)
        self.assertTrue(any(e.get("cat") == "cpu_op" for e in trace["traceEvents"]))
