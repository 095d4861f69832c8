"""`sigmoid_focal_loss`: torchvision's semantics, one fused pass, explicit backward."""

import torch

from . import _native
from ._common import check_cpu_contiguous, dtype_code, threads

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


def _as_targets(inputs, targets):
    """Targets as the kernel reads them: int64 class labels, or a dense f32/bf16 tensor shaped
    like the logits."""
    if targets.dtype in (torch.int64, torch.int32):
        # Class indices: one label per row of the last dimension.
        classes = inputs.shape[-1] if inputs.dim() > 0 else 1
        if targets.numel() * classes != inputs.numel():
            raise ValueError(
                f"class-index targets: {targets.numel()} labels for {inputs.numel()} logits "
                f"with {classes} classes (expected one label per row of the last dimension)"
            )
        return targets.to(torch.int64).contiguous()
    if targets.shape != inputs.shape:
        raise ValueError(f"targets shape {tuple(targets.shape)} != inputs shape {tuple(inputs.shape)}")
    # f32 or bf16 targets are read as they are, whatever the logits' type (the kernels take
    # either): converting f32 targets for bf16 logits would be a full extra pass over memory
    # (and would round soft targets to bf16).
    t = targets if targets.dtype in (torch.float32, torch.bfloat16) else targets.to(inputs.dtype)
    return t.contiguous()


# The loss as torch.library custom ops: torch.compile traces them as single nodes (no graph
# break), torch.library.opcheck checks them, and autograd goes through `_backward` below.
# `reduction` is 0 none, 1 mean, 2 sum. With `with_grad` (a reduced loss that needs a gradient),
# the gradient comes out of the same pass as the loss: the logits are read once, not once per
# direction, and backward only scales it by the incoming gradient.
@torch.library.custom_op("profilednn::sigmoid_focal_loss", mutates_args=(), device_types="cpu")
def _focal(inputs: torch.Tensor, targets: torch.Tensor, alpha: float, gamma: float, reduction: int,
           ignore_index: int, with_grad: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if with_grad and reduction != 0:
        grad = _grads.get(inputs)
        v = _native.focal_forward_backward(inputs, targets, ignore_index, alpha, gamma, reduction, 1.0, grad,
                                           threads())
        return torch.tensor(v, dtype=torch.float32), grad
    none = inputs.new_empty((0,))
    if reduction == 0:
        out = torch.empty_like(inputs, memory_format=torch.contiguous_format)
        _native.focal_forward(inputs, targets, ignore_index, alpha, gamma, 0, out, threads())
        return out, none
    v = _native.focal_forward(inputs, targets, ignore_index, alpha, gamma, reduction, None, threads())
    return torch.tensor(v, dtype=torch.float32), none


@_focal.register_fake
def _focal_fake(inputs, targets, alpha, gamma, reduction, ignore_index, with_grad):
    grad = inputs.new_empty((0,))
    if reduction == 0:
        return torch.empty_like(inputs, memory_format=torch.contiguous_format), grad
    if with_grad:
        grad = torch.empty_like(inputs, memory_format=torch.contiguous_format)
    return inputs.new_empty((), dtype=torch.float32), grad


@torch.library.custom_op("profilednn::sigmoid_focal_loss_backward", mutates_args=(), device_types="cpu")
def _focal_backward(grad_out: torch.Tensor, inputs: torch.Tensor, targets: torch.Tensor, alpha: float, gamma: float,
                    reduction: int, ignore_index: int) -> torch.Tensor:
    grad_in = torch.empty_like(inputs, memory_format=torch.contiguous_format)
    if reduction == 0:
        g = grad_out.to(inputs.dtype).contiguous()
        _native.focal_backward(inputs, targets, ignore_index, alpha, gamma, 0, 0.0, g, grad_in, threads())
    else:
        _native.focal_backward(inputs, targets, ignore_index, alpha, gamma, reduction, float(grad_out), None,
                               grad_in, threads())
    return grad_in


@_focal_backward.register_fake
def _focal_backward_fake(grad_out, inputs, targets, alpha, gamma, reduction, ignore_index):
    return torch.empty_like(inputs, memory_format=torch.contiguous_format)


def _eager(t):
    """Whether `t` is a real tensor outside any tracing (torch.compile, AOTAutograd, make_fx):
    only then may backward branch on its value."""
    if torch.compiler.is_compiling() or type(t) is not torch.Tensor:
        return False
    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.PROXY) is None


def _setup_context(ctx, inputs, output):
    x, t, alpha, gamma, reduction, ignore_index, with_grad = inputs
    ctx.save_for_backward(x, t, output[1])
    ctx.args = (alpha, gamma, reduction, ignore_index)
    ctx.fused = with_grad and reduction != 0
    # The second output is the gradient itself, not a differentiable result. Left
    # differentiable, autograd materialized a logits-sized zero gradient for it on every
    # backward (`aten::zeros`: 46 ms of a 102 ms backward at a quarter of RetinaNet's head,
    # issue 51), and the path through autograd took 3.5x the fused call.
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)
    # Whether the saved gradient was handed out as it is (see `_backward`).
    ctx.handed_out = False


def _backward(ctx, grad_loss, _grad_of_grad):
    if torch.is_grad_enabled() and _eager(grad_loss):
        # create_graph=True: the kernels' gradient is not itself differentiable (torchvision's
        # formula is: call it for double backward).
        raise RuntimeError("profilednn sigmoid_focal_loss: double backward (create_graph=True) is not "
                           "supported; use torchvision.ops.sigmoid_focal_loss for it")
    x, t, grad = ctx.saved_tensors
    alpha, gamma, reduction, ignore_index = ctx.args
    if ctx.fused and ctx.handed_out:
        # A retained graph's next backward: the buffer handed out the first time may be a
        # leaf's `.grad` by now, accumulated into or zeroed in place, so it is computed again.
        gi = _focal_backward(grad_loss, x, t, alpha, gamma, reduction, ignore_index)
    elif ctx.fused and _eager(grad_loss) and grad_loss.item() == 1.0:
        # Eager: a loss seeded with 1 (`loss.backward()`) takes the gradient as it is, with no
        # pass over it. A leaf's AccumulateGrad then keeps this very buffer as `.grad` (it steals
        # a gradient nobody else holds): cloning it here, as before, cost a full copy (52 ms of
        # the same 102 ms).
        ctx.handed_out = True
        gi = grad
    elif ctx.fused:
        gi = grad * grad_loss.to(grad.dtype)
    else:
        gi = _focal_backward(grad_loss, x, t, alpha, gamma, reduction, ignore_index)
    return gi, None, None, None, None, None, None


_focal.register_autograd(_backward, setup_context=_setup_context)


def _formula(inputs, targets, alpha, gamma, reduction):
    """torchvision.ops.sigmoid_focal_loss's formula, written with torch ops (dense targets)."""
    p = torch.sigmoid(inputs)
    ce = torch.nn.functional.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


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
    if inputs.device.type != "cpu":
        raise ValueError(f"inputs: expected a CPU tensor, got device {inputs.device}")
    if inputs.dtype not in (torch.float32, torch.bfloat16) or (
            targets.requires_grad and torch.is_grad_enabled() and targets.is_floating_point()):
        # What the kernels do not take (float16/float64 logits, a gradient for the targets):
        # torchvision's own formula, so that the drop-in (bound process-wide by
        # profilednn.optimize) takes whatever torchvision takes.
        return _formula(inputs, targets, alpha, gamma, reduction)
    # torchvision takes any layout (a head's logits are often a transposed view): so does the
    # drop-in, at the price of one copy.
    inputs = inputs.contiguous()
    targets = _as_targets(inputs, targets)
    red = _REDUCTIONS[reduction]
    if inputs.numel() == 0:
        # Empty storage: answer here, as torchvision would.
        if red == 0:
            return inputs * 0.0
        return (inputs.sum() * 0.0 + (float("nan") if red == 1 else 0.0)).float()
    with_grad = red != 0 and inputs.requires_grad and torch.is_grad_enabled()
    loss, _grad = _focal(inputs, targets, float(alpha), float(gamma), red, int(ignore_index), with_grad)
    return loss


def sigmoid_focal_loss_and_grad(inputs, targets, alpha=0.25, gamma=2, reduction="mean", ignore_index=IGNORE,
                                grad=None):
    """The fused training step: returns (loss, d loss / d inputs) in one pass over memory.

    `grad`: an existing tensor like `inputs` to write the gradient into (reusing it across
    iterations saves allocating and first-touching a logits-sized buffer every step).
    """
    check_cpu_contiguous(inputs, "inputs")
    dtype_code(inputs, "inputs")
    t = _as_targets(inputs, targets)
    if grad is None:
        grad = _grads.get(inputs)
    elif grad.shape != inputs.shape or grad.dtype != inputs.dtype:
        raise ValueError(f"grad must be like inputs: {tuple(inputs.shape)} {inputs.dtype}")
    if inputs.numel() == 0:
        return torch.tensor(float("nan") if reduction == "mean" else 0.0), grad
    v = _native.focal_forward_backward(inputs, t, int(ignore_index), float(alpha), float(gamma),
                                       _REDUCTIONS[reduction], 1.0, grad, threads())
    return torch.tensor(v, dtype=torch.float32), grad
