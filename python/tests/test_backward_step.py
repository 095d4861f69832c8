"""The optimizer step fused into backward gives the parameters the step after backward gives,
bit for bit, and refuses the loops it cannot serve.

Run: python -m unittest discover -s python/tests (needs torch and the built package).
"""

import copy
import unittest

import torch
from torch import nn
from torch.nn.utils import clip_grad_norm_  # bound before step_in_backward: must be caught too

from profilednn.optim import LAMB, SGD, AdamW, step_in_backward


def mlp(dtype=torch.float32):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)).to(dtype)


def data(i, dtype=torch.float32):
    g = torch.Generator().manual_seed(i)
    return torch.randn(8, 12, generator=g).to(dtype), torch.randn(8, 4, generator=g).to(dtype)


class StepInBackward(unittest.TestCase):
    def test_same_parameters_as_the_step_after_backward(self):
        for dtype, cls, kwargs in ((torch.float32, SGD, dict(lr=0.1, momentum=0.9, weight_decay=1e-3)),
                                   (torch.float32, AdamW, dict(lr=1e-2)), (torch.float32, LAMB, dict(lr=1e-2)),
                                   (torch.bfloat16, AdamW, dict(lr=1e-2)),
                                   (torch.bfloat16, SGD, dict(lr=0.1, momentum=0.9, master="split"))):
            a = mlp(dtype)
            b = copy.deepcopy(a)
            oa = cls(a.parameters(), **kwargs)
            ob = step_in_backward(cls(b.parameters(), **kwargs))
            for i in range(4):
                x, y = data(i, dtype)
                oa.zero_grad()
                nn.functional.mse_loss(a(x), y).backward()
                oa.step()
                ob.zero_grad()
                nn.functional.mse_loss(b(x), y).backward()
                for p in b.parameters():
                    self.assertIsNone(p.grad, "the gradient is dropped after its update")
                ob.step()
            for p, q in zip(a.parameters(), b.parameters()):
                torch.testing.assert_close(q, p, rtol=0, atol=0, msg=f"{cls.__name__} {dtype}")
            self.assertEqual(ob.state_dict()["state"].keys(), oa.state_dict()["state"].keys())
            # After the first step (state made on the general path), the fast path serves.
            self.assertEqual(ob.general_updates, 6, cls.__name__)
            self.assertEqual(ob.fast_updates, 18, cls.__name__)

    def test_against_torch_optim(self):
        a = mlp()
        b = copy.deepcopy(a)
        oa = torch.optim.AdamW(a.parameters(), lr=1e-2)
        ob = step_in_backward(AdamW(b.parameters(), lr=1e-2))
        for i in range(4):
            x, y = data(i)
            for m, o in ((a, oa), (b, ob)):
                o.zero_grad()
                nn.functional.mse_loss(m(x), y).backward()
                o.step()
        for p, q in zip(a.parameters(), b.parameters()):
            torch.testing.assert_close(q, p, rtol=2e-6, atol=1e-7)

    def test_a_scheduler_and_a_loaded_checkpoint_drive_the_update(self):
        model = mlp()
        opt = step_in_backward(SGD(model.parameters(), lr=0.1, momentum=0.9))
        x, y = data(0)
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        # A checkpoint replaces the group dicts; a scheduler made on them sets lr 0 at once
        # (LambdaLR applies epoch 0): the next backward must not move anything.
        opt.load_state_dict(opt.state_dict())
        torch.optim.lr_scheduler.LambdaLR(opt.optimizer, lambda epoch: 0.0)
        self.assertTrue(all(g["lr"] == 0.0 for g in opt.param_groups))
        before = [p.detach().clone() for p in model.parameters()]
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        for u, v in zip(before, model.parameters()):
            self.assertTrue(torch.equal(u, v.detach()), "lr 0 (p -= 0 * buf): unchanged")

    def test_a_parameter_added_later_is_not_left_behind_silently(self):
        model = mlp()
        extra = nn.Parameter(torch.ones(3))
        opt = step_in_backward(SGD(model.parameters(), lr=0.1))
        opt.optimizer.add_param_group({"params": [extra]})
        x, y = data(0)
        (nn.functional.mse_loss(model(x), y) + extra.sum()).backward()
        with self.assertRaisesRegex(RuntimeError, "not updated in backward"):
            opt.step()

    def test_loops_it_cannot_serve_are_refused(self):
        model = mlp()
        opt = step_in_backward(SGD(model.parameters(), lr=0.1))
        x, y = data(0)
        nn.functional.mse_loss(model(x), y).backward()
        with self.assertRaisesRegex(RuntimeError, "gradient accumulation"):
            nn.functional.mse_loss(model(x), y).backward()
        with self.assertRaisesRegex(RuntimeError, "closure"):
            opt.step(lambda: 0.0)
        with self.assertRaisesRegex(TypeError, "cannot be driven per parameter"):
            step_in_backward(torch.optim.SGD(model.parameters(), lr=0.1))
        opt.remove()
        opt.optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        self.assertIsNotNone(model[0].weight.grad, "hooks removed: backward leaves gradients again")

    def test_clipping_after_a_backward_that_stepped_raises(self):
        # Issue 51: clip_grad_norm_(..., 0.1) after backward saw a norm of 0.0 (no gradient
        # left) and did nothing: 3 steps later the weights differed from the loop as written.
        model = mlp()
        plain = copy.deepcopy(model)
        opt = step_in_backward(SGD(model.parameters(), lr=0.1))
        x, y = data(0)
        for clip in (lambda ps: clip_grad_norm_(ps, 0.1), lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.1),
                     lambda ps: torch.nn.utils.clip_grad_value_(ps, 0.01),
                     lambda ps: torch.nn.utils.clip_grad_norm_(parameters=ps, max_norm=0.1)):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            with self.assertRaisesRegex(RuntimeError, "already updated inside backward by step_in_backward"):
                clip(model.parameters())
            opt.step()
        # Not stepped in backward: clipping works as torch's, a generator of parameters too.
        nn.functional.mse_loss(plain(x), y).backward()
        grads = [p.grad.clone() for p in plain.parameters()]
        norm = clip_grad_norm_((p for p in plain.parameters()), 0.1)
        expected = torch.cat([g.flatten() for g in grads]).norm()
        torch.testing.assert_close(norm, expected)
        torch.testing.assert_close(plain[0].weight.grad, grads[0] * (0.1 / (expected + 1e-6)))
        # After step() (and before the next backward) nothing is pending: clipping is allowed.
        opt.zero_grad()
        clip_grad_norm_(model.parameters(), 0.1)


if __name__ == "__main__":
    unittest.main()
