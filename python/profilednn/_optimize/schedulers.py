"""LR schedulers built on the optimizer `optimize` replaced, moved onto its replacement.

The new optimizer shares the old one's group dicts, so the learning rates a scheduler sets were
always right; but `scheduler.optimizer` stayed the old object, whose `step` (wrapped by the
scheduler to note that it ran) is never called again, so torch warned "Detected call of
`lr_scheduler.step()` before `optimizer.step()`" on every run, and code reading
`scheduler.optimizer` saw the old optimizer.
"""

import functools
import gc

import torch


def _scheduler_types():
    lr = torch.optim.lr_scheduler
    return tuple(t for t in (getattr(lr, "LRScheduler", None), getattr(lr, "ReduceLROnPlateau", None)) if t)


def schedulers_of(optimizer):
    """The LR schedulers whose `.optimizer` is `optimizer` (found through the garbage collector's
    referrers: the scheduler itself, or its `__dict__`)."""
    kinds = _scheduler_types()
    found = []
    for r in gc.get_referrers(optimizer):
        owners = [r] if isinstance(r, kinds) else (
            [o for o in gc.get_referrers(r) if isinstance(o, kinds) and getattr(o, "__dict__", None) is r]
            if isinstance(r, dict) else [])
        found += [s for s in owners if getattr(s, "optimizer", None) is optimizer and all(s is not f for f in found)]
    return found


def _track_step(optimizer):
    """`optimizer.step` noting that it ran, as torch's schedulers wrap the optimizer they are
    built on (the attribute names are torch's: `_wrapped_by_lr_sched`, `_opt_called`)."""
    step = optimizer.step
    if hasattr(step, "_wrapped_by_lr_sched"):
        return

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        optimizer._opt_called = True
        return step(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


def rebind_schedulers(old, new):
    """Every LR scheduler of `old` drives `new` from now on; returns how many."""
    if new is old:
        return 0
    found = schedulers_of(old)
    if found:
        _track_step(new)
        if getattr(old, "_opt_called", False):
            new._opt_called = True
    for s in found:
        s.optimizer = new
    return len(found)
