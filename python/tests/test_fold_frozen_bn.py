"""`profilednn.nn.fold_frozen_batchnorm` against the unfolded model (the reference is torchvision's
own FrozenBatchNorm2d forward): same outputs, losses and gradients to f32 rounding, bf16 within
its rounding, the same state dict, and the element-wise passes gone from PyTorch's profile.

Run: python -m unittest discover -s python/tests (needs torch and torchvision).
"""

import copy
import unittest

import torch
import torchvision
from torchvision.ops.misc import FrozenBatchNorm2d

from profilednn.nn import FoldedConv2d, fold_frozen_batchnorm, unfold_frozen_batchnorm


def randomize_frozen_bn(m, g):
    """Statistics far from the identity, so a fold that forgets a term shows."""
    for bn in m.modules():
        if isinstance(bn, FrozenBatchNorm2d):
            n = bn.weight.numel()
            bn.weight.copy_(torch.rand(n, generator=g) + 0.5)
            bn.bias.copy_(torch.randn(n, generator=g) * 0.5)
            bn.running_mean.copy_(torch.randn(n, generator=g) * 0.3)
            bn.running_var.copy_(torch.rand(n, generator=g) + 0.2)


def frozen_resnet18(seed=0):
    torch.manual_seed(seed)
    m = torchvision.models.resnet18(weights=None, norm_layer=FrozenBatchNorm2d, num_classes=10)
    randomize_frozen_bn(m, torch.Generator().manual_seed(seed + 1))
    # As in torchvision's detection backbones: the stem and first stage frozen.
    for p in list(m.conv1.parameters()) + list(m.layer1.parameters()):
        p.requires_grad_(False)
    return m


def relative_error(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


class FoldFrozenBatchNorm(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.x = torch.randn(2, 3, 64, 64)
        self.y = torch.tensor([1, 7])

    def test_every_pair_of_resnet18_is_folded(self):
        m = frozen_resnet18()
        pairs = fold_frozen_batchnorm(m, example_inputs=(self.x,))
        # ResNet-18: the stem, 8 basic blocks with two convolutions each, 3 downsample
        # shortcuts — 20 convolutions, each followed by its batch-norm.
        self.assertEqual(len(pairs), 20)
        self.assertIn(("layer2.0.downsample.0", "layer2.0.downsample.1"), pairs)
        self.assertEqual(sum(type(c) is FoldedConv2d for c in m.modules()), 20)

    def test_same_losses_and_gradients_over_training_steps(self):
        ref = frozen_resnet18()
        folded = copy.deepcopy(ref)
        fold_frozen_batchnorm(folded, example_inputs=(self.x,))
        opts = [torch.optim.SGD([p for p in mm.parameters() if p.requires_grad], lr=0.002, momentum=0.9)
                for mm in (ref, folded)]
        for step in range(3):
            losses = []
            for mm, opt in zip((ref, folded), opts):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(mm(self.x), self.y)
                loss.backward()
                losses.append(loss.detach())
            self.assertTrue(torch.isfinite(losses[0]), f"reference diverged at step {step}")
            # f32 rounding: (x*w)*s and x*(w*s) differ in the last bits, which the optimizer's
            # steps carry forward (1.5e-5 after three steps, measured).
            self.assertLess(relative_error(losses[1], losses[0]), 1e-5 if step == 0 else 1e-4, f"step {step}")
            for (name, pr), pf in zip(ref.named_parameters(), folded.parameters()):
                self.assertEqual(pr.requires_grad, pf.requires_grad, name)
                if pr.requires_grad:
                    self.assertLess(relative_error(pf.grad, pr.grad), 1e-4, f"{name} step {step}")
                else:
                    self.assertIsNone(pf.grad, name)
            for opt in opts:
                opt.step()

    def test_bf16_autocast_within_bf16_rounding(self):
        ref = frozen_resnet18()
        folded = copy.deepcopy(ref)
        fold_frozen_batchnorm(folded)
        outs = []
        for mm in (ref, folded):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                outs.append(mm(self.x).float())
        f32 = ref(self.x)
        # Both bf16 runs are within bf16's error of the f32 model, and of each other.
        e_ref, e_fold = relative_error(outs[0], f32), relative_error(outs[1], f32)
        self.assertLess(e_fold, max(4 * e_ref, 0.05), f"folded {e_fold:.3g}, unfolded {e_ref:.3g}")
        self.assertLess(relative_error(outs[1], outs[0]), 0.1)

    def test_state_dict_unchanged_and_loads_both_ways(self):
        ref = frozen_resnet18()
        folded = copy.deepcopy(ref)
        fold_frozen_batchnorm(folded)
        sd_ref, sd_fold = ref.state_dict(), folded.state_dict()
        self.assertEqual(list(sd_ref), list(sd_fold))
        other = frozen_resnet18(seed=5)
        folded.load_state_dict(other.state_dict())
        # The cached fold follows the loaded statistics and weights.
        self.assertLess(relative_error(folded(self.x), other(self.x)), 1e-5)

    def test_unfold_restores_the_model(self):
        m = frozen_resnet18()
        out = m(self.x)
        fold_frozen_batchnorm(m)
        self.assertEqual(unfold_frozen_batchnorm(m), 20)
        self.assertFalse(any(type(c) is FoldedConv2d for c in m.modules()))
        self.assertTrue(all(type(b) is FrozenBatchNorm2d for b in m.modules() if isinstance(b, FrozenBatchNorm2d)))
        self.assertTrue(torch.equal(m(self.x), out))

    def test_elementwise_passes_leave_the_profile(self):
        def muls(mm):
            torch.nn.functional.cross_entropy(mm(self.x), self.y).backward()  # caches warm
            with torch.profiler.profile() as prof:
                torch.nn.functional.cross_entropy(mm(self.x), self.y).backward()
            return sum(e.count for e in prof.key_averages() if e.key == "aten::mul")

        m = frozen_resnet18()
        before = muls(m)
        fold_frozen_batchnorm(m)
        after = muls(m)
        # Unfolded: FrozenBatchNorm2d's three muls per layer (weight*rsqrt, mean*scale, x*scale)
        # on 20 layers, plus the backward of x*scale.
        self.assertGreaterEqual(before, 60)
        # Folded: one weight scaling per trainable convolution (15 of 20) and its backward, no
        # mul on an activation.
        self.assertLessEqual(after, 2 * 15, f"{after} muls after, {before} before")

    def test_a_batchnorm_that_does_not_follow_its_conv_is_refused(self):
        class Crossed(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
                self.bn = FrozenBatchNorm2d(4)
                self.other = torch.nn.Conv2d(3, 4, 1)
                self.bn.running_mean.fill_(0.5)

            def forward(self, x):
                return self.conv(x) + self.bn(self.other(x))

        m = Crossed()
        with self.assertRaisesRegex(ValueError, "restored"):
            fold_frozen_batchnorm(m, example_inputs=(self.x,))
        self.assertIs(type(m.conv), torch.nn.Conv2d)
        self.assertIs(type(m.bn), FrozenBatchNorm2d)

    def test_a_deep_backbones_correct_fold_is_accepted_with_its_measured_difference(self):
        # A newcomer's ResNet-50-FPN backbone (53 pairs, outputs up to tens): the fold is right
        # but f32 rounding over 53 layers differs by more than a fixed atol of 1e-5, which
        # used to refuse it.
        from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
        torch.manual_seed(0)
        m = _resnet_fpn_extractor(torchvision.models.resnet50(weights=None, norm_layer=FrozenBatchNorm2d), 3)
        g = torch.Generator().manual_seed(1)
        randomize_frozen_bn(m, g)
        x = torch.randn(1, 3, 96, 96, generator=g)
        pairs = fold_frozen_batchnorm(m, example_inputs=(x,))
        self.assertEqual(len(pairs), 53)
        self.assertGreater(pairs.max_abs_diff, 0.0)
        self.assertLessEqual(pairs.max_abs_diff, pairs.tolerance)
        # The tolerance stays far below the outputs' magnitude: a wrong fold still fails.
        with torch.no_grad():
            scale = max(t.abs().max().item() for t in m(x).values())
        self.assertLess(pairs.tolerance, 1e-3 * scale)

    def test_nothing_to_fold_says_why(self):
        m = torchvision.models.resnet18(weights=None)  # trainable BatchNorm2d
        with self.assertWarnsRegex(UserWarning, "nothing to fold.*trainable batch-norm"):
            self.assertEqual(fold_frozen_batchnorm(m), [])
        with self.assertWarnsRegex(UserWarning, "no batch-norm"):
            self.assertEqual(fold_frozen_batchnorm(torch.nn.Linear(2, 2)), [])


if __name__ == "__main__":
    unittest.main()
