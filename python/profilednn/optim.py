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
"""

import torch

from . import _native
from ._common import BF16, dtype_code, threads

# dtype code of a bf16 parameter in the split layout (python/src/lib.rs, BF16_SPLIT).
_BF16_SPLIT = 3
# dtype code of a bf16 parameter with bf16 state and no master (python/src/lib.rs, BF16_STATE).
_BF16_STATE = 4
_MASTERS = ("f32", "split", "none")


def _check_master(master, amsgrad=False, lamb=False):
    if master not in _MASTERS:
        raise ValueError(f"master must be one of {_MASTERS}, got {master!r}")
    if master == "none" and (amsgrad or lamb):
        raise ValueError('master="none" (bf16 state, torch\'s fused layout) is for SGD, Adam and AdamW '
                         'without amsgrad: use master="f32" or "split"')
    return master


def _dense_format(p):
    """The memory format in which `p` is dense (element-wise updates only need parameter,
    gradient and state to share one layout)."""
    if p.is_contiguous():
        return torch.contiguous_format
    for fmt in (torch.channels_last, torch.channels_last_3d):
        try:
            if p.is_contiguous(memory_format=fmt):
                return fmt
        except RuntimeError:
            pass
    raise ValueError("parameter: expected a dense tensor (contiguous or channels-last)")


def _param_ptrs(p, state, master_kind="f32"):
    if p.device.type != "cpu":
        raise ValueError(f"parameter: expected a CPU tensor, got device {p.device}")
    fmt = _dense_format(p)
    dt = dtype_code(p, "parameter")
    g = p.grad
    if g.is_sparse:
        raise ValueError("sparse gradients are not supported")
    g = g.to(p.dtype)
    if g.stride() != p.stride():
        g = g.contiguous(memory_format=fmt)
    master = 0
    # A master of another layout (the group's `master` changed) is dropped: the new layout
    # starts from the bf16 parameter as it is.
    if dt == BF16 and master_kind != "f32":
        state.pop("master", None)
    if dt == BF16 and master_kind != "split":
        state.pop("master_low", None)
    if dt == BF16 and master_kind == "none":
        return p.data_ptr(), g, _BF16_STATE, 0
    if dt == BF16 and master_kind == "split":
        if "master_low" not in state:
            # Bottom halves 0: the master starts as the bf16 parameter exactly.
            state["master_low"] = torch.zeros_like(p, dtype=torch.int16)
        return p.data_ptr(), g, _BF16_SPLIT, state["master_low"].data_ptr()
    if dt == BF16:
        if "master" not in state:
            state["master"] = p.detach().float()
        # torch's load_state_dict casts floating state to the parameter's dtype.
        state["master"] = _as(state["master"], torch.float32)
        master = state["master"].data_ptr()
    return p.data_ptr(), g, dt, master


def _as(t, dtype):
    """`t` in `dtype`: state loaded from torch (whose load_state_dict casts floating state to
    the parameter's dtype) or kept under another `master` is converted, never handed to the
    kernels as bytes of another type."""
    return t if t.dtype == dtype else t.to(dtype)


def _state_dtype(p, dt):
    """The state's dtype: the parameter's in torch's layout (master="none"), else f32."""
    return p.dtype if dt == _BF16_STATE else torch.float32


class SGD(torch.optim.Optimizer):
    """Drop-in for `torch.optim.SGD` (one fused pass over all parameters)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 master="f32"):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                                      master=_check_master(master)))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # Every group checked before any state changes.
        kinds = [_check_master(group.get("master", self.defaults["master"])) for group in self.param_groups]
        for group, kind in zip(self.param_groups, kinds):
            firsts, rest, keep = [], [], []
            for p in group["params"]:
                if p.grad is None or p.numel() == 0:
                    continue
                st = self.state[p]
                ptr, g, dt, master = _param_ptrs(p, st, kind)
                keep.append(g)
                buf = 0
                first = False
                if group["momentum"] != 0:
                    if st.get("momentum_buffer") is None:
                        st["momentum_buffer"] = torch.zeros_like(p, dtype=_state_dtype(p, dt))
                        first = True
                    st["momentum_buffer"] = _as(st["momentum_buffer"], _state_dtype(p, dt))
                    buf = st["momentum_buffer"].data_ptr()
                (firsts if first else rest).append((ptr, g.data_ptr(), buf, p.numel(), dt, master))
            for items, first in ((firsts, True), (rest, False)):
                if items:
                    _native.sgd_step(items, first, group["lr"], group["momentum"], group["dampening"],
                                     group["weight_decay"], group["nesterov"], group["maximize"], threads())
        return loss


class _AdamLike(torch.optim.Optimizer):
    _decoupled = False
    _lamb = False

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        # Every group checked before any state changes.
        kinds = [_check_master(group.get("master", self.defaults["master"]), group.get("amsgrad", False), self._lamb)
                 for group in self.param_groups]
        for group, kind in zip(self.param_groups, kinds):
            by_step, keep = {}, []
            for p in group["params"]:
                if p.grad is None or p.numel() == 0:
                    continue
                st = self.state[p]
                ptr, g, dt, master = _param_ptrs(p, st, kind)
                keep.append(g)
                if "step" not in st:
                    st["step"] = torch.tensor(0.0)
                    st["exp_avg"] = torch.zeros_like(p, dtype=_state_dtype(p, dt))
                    st["exp_avg_sq"] = torch.zeros_like(p, dtype=_state_dtype(p, dt))
                if group.get("amsgrad") and "max_exp_avg_sq" not in st:
                    st["max_exp_avg_sq"] = torch.zeros_like(p, dtype=torch.float32)
                for k in ("exp_avg", "exp_avg_sq"):
                    st[k] = _as(st[k], _state_dtype(p, dt))
                if group.get("amsgrad"):
                    st["max_exp_avg_sq"] = _as(st["max_exp_avg_sq"], torch.float32)
                mx = st["max_exp_avg_sq"].data_ptr() if group.get("amsgrad") else 0
                step = int(st["step"].item())
                st["step"] += 1
                by_step.setdefault(step, []).append(
                    (ptr, g.data_ptr(), st["exp_avg"].data_ptr(), st["exp_avg_sq"].data_ptr(), mx, p.numel(), dt, master))
            b1, b2 = group["betas"]
            for step, items in by_step.items():
                _native.adam_step(items, step, group["lr"], b1, b2, group["eps"], group["weight_decay"],
                                  self._decoupled, bool(group.get("amsgrad", False)),
                                  bool(group.get("maximize", False)), self._lamb, threads())
        return loss


class Adam(_AdamLike):
    """Drop-in for `torch.optim.Adam`."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, maximize=False,
                 master="f32"):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, master=_check_master(master, amsgrad)))


class AdamW(_AdamLike):
    """Drop-in for `torch.optim.AdamW` (decoupled weight decay)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *, maximize=False,
                 master="f32"):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, master=_check_master(master, amsgrad)))


class LAMB(_AdamLike):
    """LAMB (You et al.): Adam's update scaled per tensor by the trust ratio ||p|| / ||u||."""

    _lamb = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, *, master="f32"):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      master=_check_master(master, lamb=True)))
