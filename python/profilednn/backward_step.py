"""The optimizer step fused into backward: each parameter is updated as soon as autograd has
accumulated its gradient (`Tensor.register_post_accumulate_grad_hook`), and the gradient is then
dropped.

Why: a step after backward re-reads every gradient from memory (a 25 M-parameter model's 100 MB
of f32 gradients is far beyond the caches), and `zero_grad` is one more pass or an allocation per
step. Updated in the hook, a parameter's gradient was written a moment before, and often still
sits in the cache; nothing is left to zero.

    opt = profilednn.optim.AdamW(model.parameters(), lr=1e-3)
    opt = profilednn.optim.step_in_backward(opt)
    for x, y in loader:
        opt.zero_grad()            # nothing to do: kept so the loop reads as before
        loss_fn(model(x), y).backward()   # the parameters are updated here
        opt.step()                 # checks the step happened once per parameter

Where it cannot be used, because the update must see every gradient of the step first or must
wait for several backward passes:

* gradient clipping (`clip_grad_norm_` after backward would find no gradient left, see a norm
  of 0 and do nothing: the update used the unclipped gradient). Detected: torch's
  `clip_grad_norm_`, `clip_grad_value_` and `clip_grads_with_norm_` raise when given a parameter
  updated in the backward just run, called through `torch.nn.utils`, `torch.nn.utils.clip_grad`
  or any module-level name bound to them (`from torch.nn.utils import clip_grad_norm_`). Not
  detected: a binding kept elsewhere before `step_in_backward` (a closure, a default argument),
  another library's clipping, and code reading `.grad` itself (it finds None);
* gradient accumulation (several backward passes per step): the second backward before
  `step()` raises;
* closures (`optimizer.step(closure)`) and anything else that reads `.grad` after backward;
* AMP's `GradScaler` (it unscales and checks every gradient before the step).

`step_in_backward` raises for an optimizer it cannot drive (only ProfileDNN's SGD, Adam, AdamW
and LAMB: their update runs per parameter with the same state, so the state dict is unchanged).
"""

import functools
import sys
import weakref

import torch

from . import _native
from ._common import same_layout, threads, traced


class StepInBackward:
    """An optimizer whose update runs inside backward. `step()` and `zero_grad()` only check;
    `state_dict`, `load_state_dict`, `param_groups` and `state` are the wrapped optimizer's (give
    an LR scheduler `.optimizer`)."""

    def __init__(self, optimizer):
        if not hasattr(optimizer, "_step_group"):
            raise TypeError(f"step_in_backward: {type(optimizer).__name__} cannot be driven per parameter; use "
                            "profilednn.optim.SGD, Adam, AdamW or LAMB (the same arguments as torch.optim's)")
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            # The hook runs as the local gradient is accumulated, before DistributedDataParallel
            # averages it: each rank would step on its own gradient, and the all-reduce on none.
            raise RuntimeError("step_in_backward: not with more than one rank (DistributedDataParallel "
                               "averages gradients after the hook would have used them)")
        self.optimizer = optimizer
        self._updated = set()
        _LIVE.add(self)
        _guard_clipping()
        self._handles = []
        # Counts of updates through the fast path and the general one (what the tests check).
        self.fast_updates = self.general_updates = 0
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    self._handles.append(p.register_post_accumulate_grad_hook(self._update))

    def _group(self, p):
        # Looked up at each update, not kept: load_state_dict replaces the group dicts, and an
        # LR scheduler edits the current ones.
        for group in self.optimizer.param_groups:
            if any(q is p for q in group["params"]):
                return group
        raise RuntimeError("step_in_backward: a parameter no longer in the optimizer's groups")

    def _update(self, p):
        if id(p) in self._updated:
            raise RuntimeError("step_in_backward: a second backward before optimizer.step() (gradient "
                               "accumulation?): the parameters were already updated at the first; "
                               "use the optimizer without step_in_backward for that loop")
        opt = self.optimizer
        group = self._group(p)
        with torch.no_grad():
            if self._fast(group, p):
                self.fast_updates += 1
            else:
                opt._step_group(group, opt._kind(group), [p])
                self.general_updates += 1
        p.grad = None
        self._updated.add(id(p))

    def _fast(self, group, p):
        """One parameter's update straight to the kernel, once its state exists and matches it
        (the general path prepares state, masters and layouts: per parameter, its Python cost
        was most of a ResNet-50 step). False: take the general path."""
        opt = self.optimizer
        st = opt.state.get(p) or {}
        g = p.grad
        if traced() or type(p) not in (torch.Tensor, torch.nn.Parameter) or type(g) is not torch.Tensor:
            return False
        if g is None or g.is_sparse or g.dtype != p.dtype or not same_layout(g, p):
            return False
        kind = group.get("master", opt.defaults["master"])
        bf16 = p.dtype == torch.bfloat16
        master = (st.get("master") if kind == "f32" else st.get("master_low") if kind == "split" else None) if bf16 \
            else None
        if bf16 and kind != "none" and master is None:
            return False
        try:
            if hasattr(opt, "_lamb"):
                if "step" not in st:
                    return False
                amsgrad = bool(group.get("amsgrad", False))
                b1, b2 = group["betas"]
                _native.adam_step([(p, g, st["exp_avg"], st["exp_avg_sq"], st.get("max_exp_avg_sq") if amsgrad else None,
                                    master)], int(st["step"]), float(group["lr"]), float(b1), float(b2),
                                  float(group["eps"]), float(group["weight_decay"]), opt._decoupled, amsgrad,
                                  bool(group.get("maximize", False)), opt._lamb, threads())
                st["step"] += 1
            else:
                buf = st.get("momentum_buffer")
                if group["momentum"] != 0 and buf is None:
                    return False
                _native.sgd_step([(p, g, buf if group["momentum"] != 0 else None, master)], False,
                                 float(group["lr"]), float(group["momentum"]), float(group["dampening"]),
                                 float(group["weight_decay"]), bool(group["nesterov"]), bool(group["maximize"]),
                                 threads())
        except (TypeError, ValueError, KeyError):
            return False  # state of another dtype or layout: the kernels checked before writing
        torch.autograd.graph.increment_version(p)
        return True

    def step(self, closure=None):
        if closure is not None:
            raise RuntimeError("step_in_backward: a closure re-evaluates the loss after backward, but the "
                               "parameters are updated inside backward; use the optimizer itself")
        missed = [i for i, g in enumerate(self.optimizer.param_groups) for p in g["params"]
                  if p.grad is not None and id(p) not in self._updated]
        self._updated.clear()
        if missed:
            raise RuntimeError(f"step_in_backward: parameters of group(s) {sorted(set(missed))} have a gradient "
                               "but were not updated in backward (added to the optimizer, or made trainable, "
                               "after step_in_backward): wrap the optimizer again")

    def zero_grad(self, set_to_none=True):
        """Nothing to zero: each gradient is dropped right after its update."""

    def remove(self):
        """Takes the hooks off: the optimizer steps after backward again."""
        for h in self._handles:
            h.remove()
        self._handles.clear()

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict):
        return self.optimizer.load_state_dict(state_dict)


# The StepInBackward optimizers alive: torch's clipping asks them whether a parameter was
# already updated in this backward.
_LIVE = weakref.WeakSet()


def _clip_functions():
    from torch.nn.utils import clip_grad

    return [f for f in (getattr(clip_grad, n, None) for n in ("clip_grad_norm_", "clip_grad_value_",
                                                               "_clip_grads_with_norm_", "clip_grads_with_norm_"))
            if f is not None and not hasattr(f, "_profilednn_unguarded")]


def _guarded(clip):
    @functools.wraps(clip)
    def guarded(parameters, *args, **kwargs):
        if _LIVE:
            # Listed once: `parameters` may be a generator.
            parameters = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            if any(id(p) in opt._updated for opt in list(_LIVE) for p in parameters):
                raise RuntimeError(
                    f"{clip.__name__}: these parameters were already updated inside backward by "
                    "step_in_backward, with the unclipped gradient, which is gone (the clip would see none and "
                    "do nothing, and training would diverge from the loop as written). Use the optimizer "
                    "without step_in_backward (optimize(..., step_in_backward=False), or opt.remove()).")
        return clip(parameters, *args, **kwargs)

    guarded._profilednn_unguarded = clip
    return guarded


def _guard_clipping():
    """torch's gradient clipping functions replaced, wherever a loaded module binds them, by ones
    that raise when given a parameter already updated in this backward (once per process;
    a function bound by a module loaded later is looked up on torch.nn.utils, guarded by then)."""
    originals = {id(f): f for f in _clip_functions()}
    if not originals:
        return
    guards = {i: _guarded(f) for i, f in originals.items()}
    for name, mod in list(sys.modules.items()):
        if mod is None or name.startswith("profilednn"):
            continue
        try:
            for attr, value in list(vars(mod).items()):
                if id(value) in guards and value is originals[id(value)]:
                    setattr(mod, attr, guards[id(value)])
        except (TypeError, AttributeError):
            continue


def step_in_backward(optimizer):
    """`optimizer` (ProfileDNN's SGD, Adam, AdamW or LAMB) with its update fused into backward."""
    return StepInBackward(optimizer)
