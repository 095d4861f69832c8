"""The kernels as PyTorch ecosystem citizens: torch.library custom ops that pass
torch.library.opcheck, trace under torch.compile(fullgraph=True) with the eager results, take
tensors (never pointer integers), and optimizers that take torch.optim's switches and checks.

Run: python -m unittest discover -s python/tests (needs torch and the built package).
"""

import copy
import unittest

import torch

from profilednn import _native
from profilednn.ops import _focal, _focal_backward, sigmoid_focal_loss
from profilednn.optim import LAMB, SGD, Adam, AdamW, _adam_step, _sgd_step

CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def _tensors(seed, shapes, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(s, generator=g) * 2 - 1).to(dtype) for s in shapes]


class OpCheck(unittest.TestCase):
    def assert_opcheck(self, op, args, what):
        result = torch.library.opcheck(op, args)
        self.assertEqual(set(result), set(CHECKS), what)
        for check, outcome in result.items():
            self.assertEqual(outcome, "SUCCESS", f"{what}: {check}")

    def test_focal_loss_forms(self):
        x = torch.randn(6, 5, requires_grad=True)
        dense = torch.rand(6, 5)
        classes = torch.tensor([0, 4, -1, -2, 2, 1])
        for red in (0, 1, 2):
            for t in (dense, classes, dense.bfloat16()):
                with_grad = red != 0
                self.assert_opcheck(_focal, (x, t, 0.25, 2.0, red, -2, with_grad), f"reduction {red} {t.dtype}")
        xb = torch.randn(6, 5).bfloat16().requires_grad_(True)
        self.assert_opcheck(_focal, (xb, dense, 0.25, 2.0, 1, -2, True), "bf16 logits")
        self.assert_opcheck(_focal_backward, (torch.tensor(0.5), x.detach(), dense, 0.25, 2.0, 1, -2), "backward")
        self.assert_opcheck(_focal_backward, (torch.rand(6, 5), x.detach(), classes, 0.25, 1.0, 0, -2), "backward none")

    def test_optimizer_steps_every_layout(self):
        shapes = [(3, 4), (5,)]
        ps, gs = _tensors(0, shapes), _tensors(1, shapes)
        zeros = [torch.zeros(s) for s in shapes]
        self.assert_opcheck(_sgd_step, (ps, gs, zeros, [], False, 0.1, 0.9, 0.0, 0.01, True, False), "sgd f32")
        self.assert_opcheck(_sgd_step, (ps, gs, [], [], True, 0.1, 0.0, 0.0, 0.0, False, True), "sgd no momentum")
        pb, gb = [p.bfloat16() for p in ps], [g.bfloat16() for g in gs]
        masters = [p.float() for p in pb]
        lows = [torch.zeros(s, dtype=torch.int16) for s in shapes]
        self.assert_opcheck(_sgd_step, (pb, gb, zeros, masters, False, 0.1, 0.9, 0.0, 0.0, False, False), "sgd master")
        self.assert_opcheck(_sgd_step, (pb, gb, zeros, lows, False, 0.1, 0.9, 0.0, 0.0, False, False), "sgd split")
        bz = [z.bfloat16() for z in zeros]
        self.assert_opcheck(_sgd_step, (pb, gb, bz, [], False, 0.1, 0.9, 0.0, 0.0, False, False), "sgd bf16 state")
        steps = [torch.tensor(0.0), torch.tensor(3.0)]

        def fresh(like):  # distinct state tensors: the op refuses aliased ones
            return [torch.zeros_like(t) for t in like]

        for lamb, amsgrad in ((False, False), (False, True), (True, False)):
            mx = fresh(zeros) if amsgrad else []
            self.assert_opcheck(_adam_step, (ps, gs, fresh(zeros), fresh(zeros), mx, [], steps, 1e-3, 0.9, 0.999, 1e-8,
                                             0.01, True, amsgrad, False, lamb), f"adam f32 lamb={lamb} amsgrad={amsgrad}")
        self.assert_opcheck(_adam_step, (pb, gb, fresh(zeros), fresh(zeros), [], masters, steps, 1e-3, 0.9, 0.999, 1e-8,
                                         0.0, False, False, False, False), "adam master")
        self.assert_opcheck(_adam_step, (pb, gb, fresh(bz), fresh(bz), [], [], steps, 1e-3, 0.9, 0.999, 1e-8, 0.0, False,
                                         False, False, False), "adam bf16 state")


class Compile(unittest.TestCase):
    def test_a_model_with_the_focal_loss_compiles_with_fullgraph_and_matches_eager(self):
        torch.manual_seed(0)
        head = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 9))
        twin = copy.deepcopy(head)
        x = torch.randn(64, 16)
        t = (torch.rand(64, 9) < 0.1).float()
        labels = torch.randint(-2, 9, (64,))

        def loss_of(model, targets, reduction):
            return sigmoid_focal_loss(model(x), targets, reduction=reduction)

        compiled = torch.compile(loss_of, fullgraph=True)
        for targets in (t, labels):
            for reduction in ("mean", "sum", "none"):
                head.zero_grad()
                twin.zero_grad()
                eager = loss_of(head, targets, reduction)
                traced = compiled(twin, targets, reduction)
                torch.testing.assert_close(traced, eager, rtol=1e-6, atol=1e-7)
                eager.sum().backward()
                traced.sum().backward()
                for a, b in zip(head.parameters(), twin.parameters()):
                    torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-7)

    def test_compiled_optimizer_steps_equal_eager_steps(self):
        for cls, kwargs in ((SGD, dict(lr=0.1, momentum=0.9, nesterov=True)), (AdamW, dict(lr=1e-2)),
                            (Adam, dict(lr=1e-2, amsgrad=True)), (LAMB, dict(lr=1e-2))):
            ps = [torch.nn.Parameter(p) for p in _tensors(2, [(8, 3), (7,)])]
            qs = [torch.nn.Parameter(p.detach().clone()) for p in ps]
            eager, traced = cls(ps, **kwargs), cls(qs, **kwargs)
            step = torch.compile(traced.step, fullgraph=True)
            for i in range(3):
                for p, q, g in zip(ps, qs, _tensors(10 + i, [(8, 3), (7,)])):
                    p.grad, q.grad = g, g.clone()
                eager.step()
                (traced.step if i == 0 else step)()  # the first step makes the state
                for p, q in zip(ps, qs):
                    torch.testing.assert_close(q, p, rtol=0, atol=0, msg=f"{cls.__name__} step {i}")

    def test_an_eager_step_bumps_the_version_of_what_it_writes(self):
        # As torch's own in-place steps do: autograd then refuses a graph that saved the old
        # parameter instead of computing with the new one.
        w = torch.nn.Parameter(torch.randn(4, 3))
        opt = SGD([w], lr=0.1)
        x = torch.randn(2, 4, requires_grad=True)
        y = (x @ w).sum()
        w.grad = torch.ones_like(w)
        before = w._version
        opt.step()
        self.assertGreater(w._version, before)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            y.backward()


class NoPointers(unittest.TestCase):
    def test_native_functions_take_tensors_and_refuse_anything_else(self):
        x, t, g = torch.randn(4, 5), torch.rand(4, 5), torch.empty(4, 5)
        with self.assertRaisesRegex(TypeError, "inputs: expected a torch.Tensor"):
            _native.focal_forward_backward(x.data_ptr(), t, -2, 0.25, 2.0, 1, 1.0, g, 1)
        with self.assertRaisesRegex(ValueError, "grad_in: expected a dense tensor"):
            _native.focal_forward_backward(x, t, -2, 0.25, 2.0, 1, 1.0, torch.empty(4, 10)[:, ::2], 1)
        with self.assertRaisesRegex(ValueError, "share memory"):
            _native.focal_forward_backward(x, t, -2, 0.25, 2.0, 1, 1.0, x, 1)
        with self.assertRaisesRegex(ValueError, "targets: shape"):
            _native.focal_forward(x, torch.rand(5, 4), -2, 0.25, 2.0, 1, None, 1)
        with self.assertRaisesRegex(ValueError, "reduction code"):
            _native.focal_forward(x, t, -2, 0.25, 2.0, 7, None, 1)
        class Fake:  # a look-alike whose data_ptr() is another buffer's
            is_cpu, layout, dtype, shape = True, torch.strided, torch.float32, (4, 5)

            def __init__(self, ptr):
                self.ptr = ptr

            def is_neg(self):
                return False

            def stride(self):
                return (5, 1)

            def data_ptr(self):
                return self.ptr

        class Sub(torch.Tensor):
            pass

        with self.assertRaisesRegex(TypeError, "inputs: expected a torch.Tensor.*got Fake"):
            _native.focal_forward_backward(Fake(g.data_ptr()), t, -2, 0.25, 2.0, 1, 1.0, g, 1)
        with self.assertRaisesRegex(TypeError, "grad_in: expected a torch.Tensor.*got Sub"):
            _native.focal_forward_backward(x, t, -2, 0.25, 2.0, 1, 1.0, torch.empty(4, 5).as_subclass(Sub), 1)
        p, grad = torch.randn(10), torch.randn(10)
        with self.assertRaisesRegex(ValueError, "share memory"):
            _native.sgd_step([(p, p, None, None)], False, 0.1, 0.0, 0.0, 0.0, False, False, 1)
        with self.assertRaisesRegex(ValueError, "share memory"):
            # Two parameters over one storage: each update would race with the other.
            _native.sgd_step([(p[:6], grad[:6], None, None), (p[4:], grad[4:], None, None)], False, 0.1, 0.0, 0.0,
                             0.0, False, False, 1)
        with self.assertRaisesRegex(TypeError, "momentum buffer of parameter 0: expected F32"):
            _native.sgd_step([(p, grad, torch.zeros(10).bfloat16(), None)], False, 0.1, 0.9, 0.0, 0.0, False, False, 1)
        with self.assertRaisesRegex(ValueError, "exp_avg of parameter 0: shape"):
            _native.adam_step([(p, grad, torch.zeros(9), torch.zeros(10), None, None)], 0, 1e-3, 0.9, 0.999, 1e-8,
                              0.0, False, False, False, False, 1)
        before = p.clone()
        _native.sgd_step([(p, grad, None, None)], False, 0.5, 0.0, 0.0, 0.0, False, False, 1)
        torch.testing.assert_close(p, before - 0.5 * grad)


class TorchSwitches(unittest.TestCase):
    def test_torch_constructor_calls_work_unchanged_and_give_torchs_results(self):
        for ours, theirs, kwargs in ((SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, foreach=True)),
                                     (SGD, torch.optim.SGD, dict(lr=0.1, momentum=0.9, fused=True)),
                                     (Adam, torch.optim.Adam, dict(lr=1e-2, foreach=False, fused=None)),
                                     (AdamW, torch.optim.AdamW, dict(lr=1e-2, fused=True))):
            ps = [torch.nn.Parameter(p) for p in _tensors(3, [(5, 4), (6,)])]
            qs = [torch.nn.Parameter(p.detach().clone()) for p in ps]
            a, b = ours(ps, **kwargs), theirs(qs, **kwargs)
            for i in range(3):
                for p, q, g in zip(ps, qs, _tensors(20 + i, [(5, 4), (6,)])):
                    p.grad, q.grad = g, g.clone()
                a.step()
                b.step()
            for p, q in zip(ps, qs):
                torch.testing.assert_close(p, q, rtol=2e-6, atol=1e-7)

    def test_switches_that_cannot_hold_and_bad_arguments_are_torchs_errors(self):
        p = [torch.nn.Parameter(torch.zeros(3))]
        with self.assertRaisesRegex(ValueError, "capturable=True"):
            AdamW(p, capturable=True)
        with self.assertRaisesRegex(ValueError, "differentiable=True"):
            SGD(p, lr=0.1, differentiable=True)
        bad = ((SGD, torch.optim.SGD, dict(lr=-1.0)), (SGD, torch.optim.SGD, dict(lr=0.1, momentum=-0.5)),
               (SGD, torch.optim.SGD, dict(lr=0.1, weight_decay=-1)), (Adam, torch.optim.Adam, dict(eps=-1.0)),
               (AdamW, torch.optim.AdamW, dict(betas=(1.0, 0.999))),
               (AdamW, torch.optim.AdamW, dict(betas=(0.9, -0.1))))
        for ours, theirs, kwargs in bad:
            with self.assertRaises(ValueError) as torch_error:
                theirs(p, **kwargs)
            with self.assertRaises(ValueError) as our_error:
                ours(p, **kwargs)
            self.assertEqual(str(our_error.exception), str(torch_error.exception), kwargs)


if __name__ == "__main__":
    unittest.main()
