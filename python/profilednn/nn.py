"""Model rewrites that remove work oneDNN cannot fuse on its own.

`fold_frozen_batchnorm(model)` is the paper's frozen batch-norm fix. torchvision's detection
backbones put a `FrozenBatchNorm2d` after every convolution; it computes `x * scale + shift` as two
full element-wise passes over the activation (and two more in the backward pass), outside oneDNN.
`profilednn advise` reports them (`frozen-batchnorm-unfolded`: 177 `aten::mul` after 111
convolutions per iteration in the RetinaNet fixture). Folded, each pair runs as one convolution
with the weights scaled per output channel and a bias — oneDNN applies the bias inside the
convolution, so the two passes disappear.

The fold is a *reparametrization*, not a rewrite of the weights: the convolution keeps its own
weight parameter and computes with `weight * scale` on the fly. Gradients therefore reach the same
parameters with the same values as before (`d loss / d w = scale * d loss / d (w * scale)`), an
optimizer built before the fold keeps working, frozen layers stay frozen, and the state dict keeps
its keys (the batch-norm buffers stay where they were), so checkpoints load either way.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

__all__ = ["fold_frozen_batchnorm", "unfold_frozen_batchnorm", "FoldedConv2d"]


def _frozen_bn_type():
    try:
        from torchvision.ops.misc import FrozenBatchNorm2d
    except ImportError:  # torchvision absent: nothing can be frozen batch-norm
        return None
    return FrozenBatchNorm2d


def _scale_shift(bn):
    """The affine map FrozenBatchNorm2d applies, per channel, in its own arithmetic."""
    scale = bn.weight * (bn.running_var + bn.eps).rsqrt()
    return scale, bn.bias - bn.running_mean * scale


class FoldedConv2d(nn.Conv2d):
    """A `Conv2d` that computes `bn(conv(x))` of its frozen batch-norm in one convolution.

    Instances are made by `fold_frozen_batchnorm`, which switches the class of an existing
    convolution (parameters and hooks stay the objects they were). The batch-norm is held by a
    plain reference, not as a submodule, so it is neither registered twice nor moved in the
    state dict.
    """

    def _scale_shift(self, bn):
        # The statistics are frozen: computed once, again only when a buffer is changed (a
        # checkpoint loaded, the model moved); no per-iteration ops for them.
        key = tuple((t._version, t.data_ptr()) for t in (bn.weight, bn.bias, bn.running_mean, bn.running_var))
        cached = self.__dict__.get("_profilednn_affine")
        if cached is None or cached[0] != key:
            with torch.no_grad():
                cached = (key, *_scale_shift(bn))
            self.__dict__["_profilednn_affine"] = cached
        return cached[1], cached[2]

    def _folded(self):
        bn = self.__dict__["_profilednn_bn"]
        scale, shift = self._scale_shift(bn)
        if self.weight.requires_grad:
            weight = self.weight * scale.reshape(-1, 1, 1, 1).to(self.weight.dtype)
        else:
            # A frozen layer: fold once, again only when the weight or a statistic changes.
            key = (self.weight._version, self.weight.data_ptr(), self.__dict__["_profilednn_affine"][0])
            cached = self.__dict__.get("_profilednn_cache")
            if cached is None or cached[0] != key:
                with torch.no_grad():
                    cached = (key, self.weight * scale.reshape(-1, 1, 1, 1).to(self.weight.dtype))
                self.__dict__["_profilednn_cache"] = cached
            weight = cached[1]
        bias = shift if self.bias is None else self.bias * scale + shift
        return weight, bias.to(self.weight.dtype)

    def forward(self, x):
        weight, bias = self._folded()
        return self._conv_forward(x, weight, bias)


def _identity_forward(self, x):
    return x


def _make_folded_bn_type(base):
    return type(f"Folded{base.__name__}", (base,), {
        "__doc__": "A FrozenBatchNorm2d whose affine map runs inside the preceding convolution "
                   "(`FoldedConv2d`): an identity that keeps its buffers in the state dict.",
        "forward": _identity_forward,
    })


_folded_bn_types = {}


def _folded_bn_type(base):
    """The identity subclass of `base` (torchvision's FrozenBatchNorm2d) used by the fold."""
    if base not in _folded_bn_types:
        _folded_bn_types[base] = _make_folded_bn_type(base)
    return _folded_bn_types[base]


def _candidates(model, bn_type):
    """(conv name, conv, bn name, bn) where a FrozenBatchNorm2d is registered right after a
    Conv2d in the same parent with one batch-norm channel per output channel.

    Registration order is how torchvision builds every backbone (`conv1, bn1, conv2, bn2, …`,
    `downsample = Sequential(conv, bn)`); `example_inputs` in the caller checks the data flow.
    """
    out = []
    for parent_name, parent in model.named_modules():
        children = list(parent.named_children())
        for (cn, conv), (bn_name, bn) in zip(children, children[1:]):
            if (type(conv) is nn.Conv2d and type(bn) is bn_type
                    and bn.weight.numel() == conv.out_channels):
                prefix = f"{parent_name}." if parent_name else ""
                out.append((prefix + cn, conv, prefix + bn_name, bn))
    return out


def _outputs(model, example_inputs):
    with torch.no_grad():
        out = model(*example_inputs)
    return [t.detach().clone() for t in _tensors(out)]


def _tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


class FoldResult(list):
    """The folded `(conv name, batch-norm name)` pairs, with the check's figures when
    `example_inputs` was given: `max_abs_diff` between the outputs before and after, and the
    `tolerance` it was held to (both `None` without a check)."""

    max_abs_diff = None
    tolerance = None


# f32's unit roundoff: a fold changes each convolution's rounding by about this, relative to its
# output, and the differences of deep networks add up layer after layer.
_F32_EPS = 2.0 ** -23


def fold_frozen_batchnorm(model: nn.Module, example_inputs=None, rtol=None, atol=None):
    """Folds every `Conv2d → FrozenBatchNorm2d` pair of `model` in place; returns the folded
    pairs as `(conv name, batch-norm name)` (a list, with the check's `max_abs_diff` and
    `tolerance` as attributes).

    `example_inputs` (a tuple of positional arguments to `model`), when given, checks the fold:
    the model's outputs before and after must agree in eval mode, else the model is restored
    and `ValueError` says so (a batch-norm that does not consume its neighbour's output, or a
    convolution output also used elsewhere, breaks the registration-order rule). The tolerance
    is f32 rounding grown with depth: `8 · 2⁻²³ · pairs · max|output|` (a ResNet-50-FPN
    backbone, 53 pairs, outputs up to 37, differed by 7e-5: a correct fold; a wrong one differs
    by the outputs' own magnitude), or `atol + rtol · |output|` when either is given.
    A model with nothing to fold (trainable `BatchNorm2d`, no frozen one after a convolution)
    returns an empty list with a warning that says why. Undo with `unfold_frozen_batchnorm(model)`.
    """
    result = FoldResult()
    bn_type = _frozen_bn_type()
    if bn_type is None:
        warnings.warn("fold_frozen_batchnorm: nothing to fold: torchvision is not installed "
                      "(FrozenBatchNorm2d comes from torchvision.ops.misc)", stacklevel=2)
        return result
    pairs = _candidates(model, bn_type)
    if not pairs:
        trainable = sum(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
        frozen = sum(type(m) is bn_type for m in model.modules())
        why = (f"the model has {trainable} trainable batch-norm layer(s), whose statistics and "
               "parameters change in training: only FrozenBatchNorm2d (detection backbones, "
               "`norm_layer=FrozenBatchNorm2d`) folds" if trainable else
               f"none of its {frozen} FrozenBatchNorm2d follows a Conv2d registered just before "
               "it in the same module" if frozen else "the model has no batch-norm layer")
        warnings.warn(f"fold_frozen_batchnorm: nothing to fold: {why}", stacklevel=2)
        return result
    before = None
    if example_inputs is not None:
        was_training = model.training
        model.eval()
        before = _outputs(model, example_inputs)
    folded_type = _folded_bn_type(bn_type)
    for _, conv, _, bn in pairs:
        conv.__dict__["_profilednn_bn"] = bn
        conv.__class__ = FoldedConv2d
        bn.__class__ = folded_type
    if before is not None:
        after = _outputs(model, example_inputs)
        model.train(was_training)
        shapes = len(before) == len(after) and all(a.shape == b.shape for a, b in zip(before, after))
        diff = max(((a.float() - b.float()).abs().max().item() for a, b in zip(before, after)
                    if a.numel()), default=0.0) if shapes else float("inf")
        scale = max((b.float().abs().max().item() for b in before if b.numel()), default=0.0)
        if rtol is None and atol is None:
            tolerance = 8 * _F32_EPS * len(pairs) * scale
        else:
            tolerance = (atol or 0.0) + (rtol or 0.0) * scale
        result.max_abs_diff, result.tolerance = diff, tolerance
        if not diff <= tolerance:
            unfold_frozen_batchnorm(model)
            raise ValueError(
                f"folding {len(pairs)} conv -> FrozenBatchNorm2d pairs changed the model's outputs "
                f"on example_inputs by up to {diff:.3g} (outputs up to {scale:.3g}; tolerance "
                f"{tolerance:.3g}): some batch-norm does not consume the output of the convolution "
                "registered before it (or that output is used elsewhere); the model was restored. "
                "Fold by hand, or file the model's structure with ProfileDNN.")
    result.extend((cn, bn_name) for cn, _, bn_name, _ in pairs)
    return result


def unfold_frozen_batchnorm(model: nn.Module):
    """Undoes `fold_frozen_batchnorm`; returns how many pairs were unfolded."""
    n = 0
    for m in model.modules():
        if type(m) is FoldedConv2d:
            bn = m.__dict__.pop("_profilednn_bn")
            m.__dict__.pop("_profilednn_cache", None)
            m.__dict__.pop("_profilednn_affine", None)
            m.__class__ = nn.Conv2d
            bn.__class__ = type(bn).__mro__[1]
            n += 1
    return n
