"""`sigmoid_focal_loss`: torchvision's semantics, one fused pass, explicit backward."""

import torch

from . import _native
from ._common import I64, check_cpu_contiguous, dtype_code, threads

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


class _GradBuffers:
    """Logits-sized gradient buffers, reused once nobody holds them any more.

    A training step needs a fresh logits-sized gradient every iteration (254 MB at RetinaNet's
    MLPerf head size); allocating it means faulting in new pages, which costs more than the
    focal loss itself (~110 ms vs ~50 ms on one core). Handing out views of a few kept buffers
    avoids that: a buffer is free again when its storage has no user but the pool (the view
    given out, and anything that kept it — a leaf's .grad, a retained graph, the caller — holds
    a reference to the storage until it is dropped).
    """

    _KEEP = 4

    def __init__(self):
        self._bufs = []
        self._count = getattr(torch._C, "_storage_Use_Count", None)

    def _free(self, b):
        # Our own tensor plus the temporary UntypedStorage made to ask.
        return self._count(b.untyped_storage()._cdata) == 2

    def get(self, like):
        n = like.numel()
        if self._count is None or n < (1 << 20):
            return torch.empty_like(like)
        for b in self._bufs:
            if b.dtype == like.dtype and b.numel() >= n and self._free(b):
                return b[:n].view(like.shape)
        b = torch.empty(n, dtype=like.dtype)
        if len(self._bufs) < self._KEEP:
            self._bufs.append(b)
        else:
            # Replace the smallest free buffer, if any.
            free = [i for i, x in enumerate(self._bufs) if self._free(x)]
            if free:
                self._bufs[min(free, key=lambda i: self._bufs[i].numel())] = b
        return b.view(like.shape)


_grads = _GradBuffers()


# Class-index targets follow torchvision: its Matcher marks anchors below the low IoU threshold
# -1 (background: they count, with an all-zero target) and those between the thresholds -2
# (ignored: RetinaNet's head drops them). Ignoring -1 instead dropped ~99 % of a RetinaNet loss.
BACKGROUND = -1
IGNORE = -2


def _targets(inputs, targets, ignore_index):
    if targets.dtype in (torch.int64, torch.int32):
        # Class indices: one label per row of the last dimension.
        classes = inputs.shape[-1] if inputs.dim() > 0 else 1
        labels = targets.to(torch.int64).contiguous()
        if labels.numel() * classes != inputs.numel():
            raise ValueError(
                f"class-index targets: {labels.numel()} labels for {inputs.numel()} logits "
                f"with {classes} classes (expected one label per row of the last dimension)"
            )
        return labels, I64, classes
    if targets.shape != inputs.shape:
        raise ValueError(f"targets shape {tuple(targets.shape)} != inputs shape {tuple(inputs.shape)}")
    # f32 or bf16 targets are read as they are, whatever the logits' type (the kernels take
    # either): converting f32 targets for bf16 logits would be a full extra pass over memory
    # (and would round soft targets to bf16).
    t = targets if targets.dtype in (torch.float32, torch.bfloat16) else targets.to(inputs.dtype)
    t = t.contiguous()
    return t, dtype_code(t, "targets"), 0


def _fused(inputs, dt, t, tdt, classes, ignore_index, alpha, gamma, red, grad):
    """One pass: the reduced loss, and d loss / d inputs written into `grad`."""
    return _native.focal_forward_backward(inputs.data_ptr(), inputs.numel(), dt, t.data_ptr(), tdt, classes,
                                          ignore_index, float(alpha), float(gamma), red, 1.0, grad.data_ptr(),
                                          threads())


class _FocalLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inputs, targets, alpha, gamma, reduction, ignore_index):
        check_cpu_contiguous(inputs, "inputs")
        dt = dtype_code(inputs, "inputs")
        t, tdt, classes = _targets(inputs, targets, ignore_index)
        red = _REDUCTIONS[reduction]
        n = inputs.numel()
        ctx.save_for_backward(inputs, t)
        ctx.args = (dt, tdt, classes, ignore_index, float(alpha), float(gamma), red)
        if n == 0:
            # Empty storage has no valid pointer: answer here, as torch would.
            if red == 0:
                return torch.empty_like(inputs)
            return torch.tensor(float("nan") if red == 1 else 0.0)
        if red != 0 and ctx.needs_input_grad[0]:
            # Training: the gradient comes out of the same pass as the loss (the logits are read
            # once, not once per direction); backward only scales it by the incoming gradient.
            grad = _grads.get(inputs)
            v = _fused(inputs, dt, t, tdt, classes, ignore_index, alpha, gamma, red, grad)
            ctx.grad = grad
            return torch.tensor(v, dtype=torch.float32)
        if red == 0:
            out = torch.empty_like(inputs)
            _native.focal_forward(inputs.data_ptr(), n, dt, t.data_ptr(), tdt, classes, ignore_index,
                                  float(alpha), float(gamma), red, out.data_ptr(), threads())
        else:
            v = _native.focal_forward(inputs.data_ptr(), n, dt, t.data_ptr(), tdt, classes, ignore_index,
                                      float(alpha), float(gamma), red, 0, threads())
            out = torch.tensor(v, dtype=torch.float32)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        inputs, t = ctx.saved_tensors
        dt, tdt, classes, ignore_index, alpha, gamma, red = ctx.args
        grad = getattr(ctx, "grad", None)
        if grad is not None:
            # Hand over the only reference (autograd may then use it in place); a second
            # backward through a retained graph recomputes below.
            ctx.grad = None
            scale = float(grad_out)
            if scale != 1.0:
                grad.mul_(scale)
            return grad, None, None, None, None, None
        grad_in = torch.empty_like(inputs)
        n = inputs.numel()
        if n == 0:
            return grad_in, None, None, None, None, None
        if red == 0:
            g = grad_out.to(inputs.dtype).contiguous()
            _native.focal_backward(inputs.data_ptr(), n, dt, t.data_ptr(), tdt, classes, ignore_index,
                                   alpha, gamma, red, 0.0, g.data_ptr(), grad_in.data_ptr(), threads())
        else:
            _native.focal_backward(inputs.data_ptr(), n, dt, t.data_ptr(), tdt, classes, ignore_index,
                                   alpha, gamma, red, float(grad_out), 0, grad_in.data_ptr(), threads())
        return grad_in, None, None, None, None, None


def sigmoid_focal_loss(inputs: torch.Tensor, targets: torch.Tensor, alpha: float = 0.25,
                       gamma: float = 2, reduction: str = "none", ignore_index: int = IGNORE) -> torch.Tensor:
    """Drop-in for `torchvision.ops.sigmoid_focal_loss`.

    `targets` is a dense tensor like `inputs` (values in [0, 1]), or class indices (int64, one per
    row of the last dimension) in torchvision's convention, that of its `Matcher` and RetinaNet
    head: a label in `0..classes` is that class, `-1` (`Matcher.BELOW_LOW_THRESHOLD`) is
    background (all-zero target, it counts), and `ignore_index`, by default `-2`
    (`Matcher.BETWEEN_THRESHOLDS`), leaves the row out (no loss, no gradient, not counted by
    `mean`); any other label outside `0..classes` is background too. Reductions are computed in
    float32.
    """
    if reduction not in _REDUCTIONS:
        raise ValueError(f"Invalid value for arg 'reduction': '{reduction}' "
                         "\n Supported reduction modes: 'none', 'mean', 'sum'")
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0, got {gamma}")
    return _FocalLoss.apply(inputs, targets, alpha, gamma, reduction, ignore_index)


def sigmoid_focal_loss_and_grad(inputs, targets, alpha=0.25, gamma=2, reduction="mean", ignore_index=IGNORE,
                                grad=None):
    """The fused training step: returns (loss, d loss / d inputs) in one pass over memory.

    `grad`: an existing tensor like `inputs` to write the gradient into (reusing it across
    iterations saves allocating and first-touching a logits-sized buffer every step).
    """
    check_cpu_contiguous(inputs, "inputs")
    dt = dtype_code(inputs, "inputs")
    t, tdt, classes = _targets(inputs, targets, ignore_index)
    if grad is None:
        grad = _grads.get(inputs)
    elif grad.shape != inputs.shape or grad.dtype != inputs.dtype:
        raise ValueError(f"grad must be like inputs: {tuple(inputs.shape)} {inputs.dtype}")
    else:
        check_cpu_contiguous(grad, "grad")
    if inputs.numel() == 0:
        return torch.tensor(float("nan") if reduction == "mean" else 0.0), grad
    v = _fused(inputs, dt, t, tdt, classes, ignore_index, alpha, gamma, _REDUCTIONS[reduction], grad)
    return torch.tensor(v, dtype=torch.float32), grad
