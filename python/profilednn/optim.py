"""Fused optimizers with torch.optim's constructor arguments and state layout.

bf16 parameters are updated through an exact f32 master, kept in one of two layouts chosen by
the keyword `master`:

* ``"f32"`` (default): a full f32 copy, ``state["master"]``; the bf16 parameter is its rounding
  to nearest even. Bytes per parameter and step: SGD with momentum 22, AdamW 30.
* ``"split"``: only the master's bottom 16 bits, ``state["master_low"]`` (int16); the bf16
  parameter *is* its top 16 bits, so master = (parameter << 16) | low exactly and the step moves
  SGD 18, AdamW 26 bytes per parameter: fewer than an f32 parameter (20, 28), with the same f32
  update. The price: the bf16 parameter the model computes with is the master truncated (rounded
  toward zero, error < 1 bf16 ulp) instead of rounded to nearest (< 1/2 ulp).

* ``"none"``: torch's ``fused=True`` layout — no master, and the state (momentum buffer,
  ``exp_avg``, ``exp_avg_sq``) in bf16 too, each step computed in f32 and rounded to nearest
  even when stored. SGD 10, AdamW 14 bytes per parameter, the fewest; but every update is
  rounded to bf16, so updates below half a bf16 ulp of the parameter are lost. For SGD,
  Adam and AdamW (not amsgrad, not LAMB). Its state dict has torch's dtypes.

For f32 parameters ``master`` changes nothing.

torch's implementation switches are accepted, so a constructor call written for ``torch.optim``
works unchanged:

* ``foreach`` and ``fused`` are ignored: every step is one fused pass over all the tensors of a
  group in native code, which is what both switches ask torch for;
* ``capturable=True`` (CUDA graphs) and ``differentiable=True`` (autograd through the step) are
  errors: the kernels update CPU tensors in place, outside autograd.

The arguments are checked as torch checks them (the same ``ValueError`` messages). Each step runs
through a ``torch.library`` custom op (``torch.ops.profilednn.sgd_step_``, ``adam_step_``), so
``torch.compile`` traces a step without a graph break.
"""

from typing import List

import torch

from . import _native
from ._common import BF16, dtype_code, same_layout, threads, traced

_MASTERS = ("f32", "split", "none")


def _torch_switches(foreach, fused, capturable, differentiable):
    """torch.optim's implementation switches, as `param_groups` entries (see the module's doc)."""
    if capturable:
        raise ValueError("capturable=True is for CUDA graphs: profilednn's optimizers step CPU tensors")
    if differentiable:
        raise ValueError("differentiable=True: the fused kernels update in place outside autograd; "
                         "use torch.optim for a differentiable step")
    return dict(foreach=foreach, fused=fused, capturable=False, differentiable=False)


def _check_lr_wd(lr, weight_decay):
    # torch.optim's own checks and messages.
    if isinstance(lr, torch.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_adam(lr, betas, eps, weight_decay):
    _check_lr_wd(lr, weight_decay)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_master(master, amsgrad=False, lamb=False):
    if master not in _MASTERS:
        raise ValueError(f"master must be one of {_MASTERS}, got {master!r}")
    if master == "none" and (amsgrad or lamb):
        raise ValueError('master="none" (bf16 state, torch\'s fused layout) is for SGD, Adam and AdamW '
                         'without amsgrad: use master="f32" or "split"')
    return master


def _dense(p):
    """Checks that `p` is dense: its elements fill one span of memory, in any order of
    dimensions (contiguous, channels-last, a transposed weight); element-wise updates only
    need parameter, gradient and state to share that order."""
    if p.is_contiguous():
        return
    expected = 1
    for stride, size in sorted((st, n) for n, st in zip(p.shape, p.stride()) if n > 1):
        if stride != expected:
            break
        expected *= size
    else:
        return
    raise ValueError(f"parameter: expected a dense tensor, got shape {list(p.shape)} strides {list(p.stride())} "
                     "(a view with gaps or repeats)")


def _param_tensors(p, state, master_kind="f32"):
    """(gradient, master or None) of `p` for the kernels; makes the master on first use."""
    if p.device.type != "cpu":
        raise ValueError(f"parameter: expected a CPU tensor, got device {p.device}")
    _dense(p)
    dt = dtype_code(p, "parameter")
    g = p.grad
    if g.is_sparse:
        raise ValueError("sparse gradients are not supported")
    g = g.to(p.dtype)
    if not same_layout(g, p):
        g = torch.empty_like(p).copy_(g)  # the parameter's element order (empty_like keeps a dense layout)
    # A master of another layout (the group's `master` changed) is dropped: the new layout
    # starts from the bf16 parameter as it is.
    if dt == BF16 and master_kind != "f32":
        state.pop("master", None)
    if dt == BF16 and master_kind != "split":
        state.pop("master_low", None)
    if dt != BF16 or master_kind == "none":
        return g, None
    if master_kind == "split":
        if "master_low" not in state:
            # Bottom halves 0: the master starts as the bf16 parameter exactly.
            state["master_low"] = torch.zeros_like(p, dtype=torch.int16)
        state["master_low"] = _as(state["master_low"], torch.int16, p)
        return g, state["master_low"]
    if "master" not in state:
        state["master"] = p.detach().float()
    # torch's load_state_dict casts floating state to the parameter's dtype.
    state["master"] = _as(state["master"], torch.float32, p)
    return g, state["master"]


# The steps as torch.library custom ops: torch.compile traces an optimizer step as single nodes
# that write the parameters and state in place, and torch.library.opcheck checks them. The
# storage layout of each parameter follows from the dtypes given (python/src/optim.rs). A list
# of optional tensors is either empty (none of the parameters has one) or one per parameter:
# callers split parameters with and without a master into separate calls (torch's
# functionalization of in-place ops does not take lists of optional tensors).
def _sgd_impl(params: List[torch.Tensor], grads: List[torch.Tensor],
              momentum_buffers: List[torch.Tensor], masters: List[torch.Tensor], first: bool,
              lr: float, momentum: float, dampening: float, weight_decay: float, nesterov: bool,
              maximize: bool) -> None:
    n = len(params)
    _native.sgd_step(list(zip(params, grads, momentum_buffers or [None] * n, masters or [None] * n)), first, lr,
                     momentum, dampening, weight_decay, nesterov, maximize, threads())


_sgd_step = torch.library.custom_op("profilednn::sgd_step_", _sgd_impl, device_types="cpu",
                                    mutates_args=("params", "momentum_buffers", "masters"))


@_sgd_step.register_fake
def _sgd_step_fake(params, grads, momentum_buffers, masters, first, lr, momentum, dampening, weight_decay, nesterov,
                   maximize):
    return None


def _adam_impl(params: List[torch.Tensor], grads: List[torch.Tensor], exp_avgs: List[torch.Tensor],
               exp_avg_sqs: List[torch.Tensor], max_exp_avg_sqs: List[torch.Tensor],
               masters: List[torch.Tensor], steps: List[torch.Tensor], lr: float, beta1: float,
               beta2: float, eps: float, weight_decay: float, decoupled: bool, amsgrad: bool, maximize: bool,
               lamb: bool) -> None:
    # The kernels take one step count per call: parameters are grouped by theirs (a parameter
    # added to the optimizer later has its own), and each group's counts move on by one.
    n = len(params)
    max_exp_avg_sqs, masters = max_exp_avg_sqs or [None] * n, masters or [None] * n
    by_step = {}
    for i, s in enumerate(torch.stack(steps).tolist() if steps else []):
        by_step.setdefault(int(s), []).append(i)
    for step, idx in by_step.items():
        items = [(params[i], grads[i], exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i], masters[i]) for i in idx]
        _native.adam_step(items, step, lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize, lamb,
                          threads())
        # Counted as soon as their parameters moved: a later group's error leaves no parameter
        # updated with its count behind.
        torch._foreach_add_([steps[i] for i in idx], 1)


_adam_step = torch.library.custom_op(
    "profilednn::adam_step_", _adam_impl, device_types="cpu",
    mutates_args=("params", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "masters", "steps"))


def _call(op, *args):
    """Runs a step op: through the dispatcher when torch.compile traces it, else its
    implementation directly (the dispatcher's checks of a few hundred list entries cost
    milliseconds per step in eager mode), bumping the version counters of what it wrote as the
    dispatcher would, so autograd still notices a parameter changed under a saved graph."""
    if traced():
        return op(*args)
    impl, written = _EAGER[op]
    impl(*args)
    torch.autograd.graph.increment_version([t for i in written for t in args[i]])


# Each op's implementation, and the positions of the tensor lists it writes.
_EAGER = {_sgd_step: (_sgd_impl, (0, 2, 3)), _adam_step: (_adam_impl, (0, 2, 3, 4, 5, 6))}


@_adam_step.register_fake
def _adam_step_fake(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, masters, steps, lr, beta1, beta2, eps,
                    weight_decay, decoupled, amsgrad, maximize, lamb):
    return None


def _as(t, dtype, like):
    """`t` in `dtype` and in the memory layout of the parameter `like`: state loaded from torch
    (whose load_state_dict casts floating state to the parameter's dtype), kept under another
    `master`, or made before the model went channels-last is converted, never handed to the
    kernels as bytes of another type or in another element order."""
    if t.dtype == dtype and same_layout(t, like):
        return t
    return torch.empty_like(like, dtype=dtype).copy_(t)


def _state_dtype(p, master, kind):
    """The state's dtype: the parameter's in torch's layout (a bf16 parameter with
    master="none"), else f32."""
    return p.dtype if p.dtype == torch.bfloat16 and kind == "none" else torch.float32


class SGD(torch.optim.Optimizer):
    """Drop-in for `torch.optim.SGD` (one fused pass over all parameters)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None, master="f32"):
        _check_lr_wd(lr, weight_decay)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                                      master=_check_master(master),
                                      **_torch_switches(foreach, fused, False, differentiable)))

    def _kind(self, group):
        return _check_master(group.get("master", self.defaults["master"]))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # Every group checked before any state changes.
        kinds = [self._kind(group) for group in self.param_groups]
        for group, kind in zip(self.param_groups, kinds):
            self._step_group(group, kind, group["params"])
        return loss

    def _step_group(self, group, kind, params):
        """Updates `params` (those of `group` with a gradient), in one call per storage layout."""
        lists = {}
        for p in params:
            if p.grad is None or p.numel() == 0:
                continue
            st = self.state[p]
            g, master = _param_tensors(p, st, kind)
            buf = None
            first = False
            if group["momentum"] != 0:
                if st.get("momentum_buffer") is None:
                    st["momentum_buffer"] = torch.zeros_like(p, dtype=_state_dtype(p, master, kind))
                    first = True
                st["momentum_buffer"] = _as(st["momentum_buffer"], _state_dtype(p, master, kind), p)
                buf = st["momentum_buffer"]
            bucket = lists.setdefault((first, master is None), ([], [], [], []))
            for xs, x in zip(bucket, (p, g, buf, master)):
                if x is not None:
                    xs.append(x)
        for (first, _), (ps, gs, bufs, masters) in lists.items():
            if ps:
                _call(_sgd_step, ps, gs, bufs, masters, first, float(group["lr"]), float(group["momentum"]),
                          float(group["dampening"]), float(group["weight_decay"]), bool(group["nesterov"]),
                          bool(group["maximize"]))


class _AdamLike(torch.optim.Optimizer):
    _decoupled = False
    _lamb = False

    def _kind(self, group):
        return _check_master(group.get("master", self.defaults["master"]), group.get("amsgrad", False), self._lamb)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # Every group checked before any state changes.
        kinds = [self._kind(group) for group in self.param_groups]
        for group, kind in zip(self.param_groups, kinds):
            self._step_group(group, kind, group["params"])
        return loss

    def _step_group(self, group, kind, params):
        """Updates `params` (those of `group` with a gradient), in one call per storage layout."""
        lists = {}
        amsgrad = bool(group.get("amsgrad", False))
        for p in params:
            if p.grad is None or p.numel() == 0:
                continue
            st = self.state[p]
            g, master = _param_tensors(p, st, kind)
            sd = _state_dtype(p, master, kind)
            if "step" not in st:
                st["step"] = torch.tensor(0.0)
                st["exp_avg"] = torch.zeros_like(p, dtype=sd)
                st["exp_avg_sq"] = torch.zeros_like(p, dtype=sd)
            if amsgrad and "max_exp_avg_sq" not in st:
                st["max_exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
            for k in ("exp_avg", "exp_avg_sq"):
                st[k] = _as(st[k], sd, p)
            if amsgrad:
                st["max_exp_avg_sq"] = _as(st["max_exp_avg_sq"], torch.float32, p)
            bucket = lists.setdefault(master is None, ([], [], [], [], [], [], []))
            mx = st["max_exp_avg_sq"] if amsgrad else None
            for xs, x in zip(bucket, (p, g, st["exp_avg"], st["exp_avg_sq"], mx, master, st["step"])):
                if x is not None:
                    xs.append(x)
        b1, b2 = group["betas"]
        for ps, gs, ms, vs, mxs, masters, steps in lists.values():
            _call(_adam_step, ps, gs, ms, vs, mxs, masters, steps, float(group["lr"]), float(b1), float(b2),
                       float(group["eps"]), float(group["weight_decay"]), self._decoupled, amsgrad,
                       bool(group.get("maximize", False)), self._lamb)


class Adam(_AdamLike):
    """Drop-in for `torch.optim.Adam`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False,
                 master="f32"):
        _check_adam(lr, betas, eps, weight_decay)
        # torch's Adam(decoupled_weight_decay=True) is AdamW.
        self._decoupled = bool(decoupled_weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, master=_check_master(master, amsgrad),
                                      **_torch_switches(foreach, fused, capturable, differentiable)))


class AdamW(_AdamLike):
    """Drop-in for `torch.optim.AdamW` (decoupled weight decay)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None, master="f32"):
        _check_adam(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, master=_check_master(master, amsgrad),
                                      **_torch_switches(foreach, fused, capturable, differentiable)))


class LAMB(_AdamLike):
    """LAMB (You et al.): Adam's update scaled per tensor by the trust ratio ||p|| / ||u||."""

    _lamb = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, *, master="f32"):
        _check_adam(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      master=_check_master(master, lamb=True)))


def step_in_backward(optimizer):
    """`optimizer` with each parameter's update run inside backward, as its gradient is
    accumulated (`profilednn.backward_step`)."""
    from .backward_step import step_in_backward as wrap

    return wrap(optimizer)
