"""The model `optimize` hands back when a change acts on the forward call (bf16 autocast,
channels-last inputs, torch.compile): a thin wrapper that is, for the user's code, the model it
wraps."""

import torch
from torch import nn
from torch.utils._pytree import tree_map


def _channels_last(x):
    if isinstance(x, torch.Tensor) and x.dim() == 4 and x.is_floating_point():
        return x.contiguous(memory_format=torch.channels_last)
    return x


def _f32(x):
    if isinstance(x, torch.Tensor) and x.dtype == torch.bfloat16:
        return x.float()
    return x


class OptimizedModule(nn.Module):
    """Runs `module` under bf16 autocast (outputs returned in f32, so the loss is computed in
    f32) and/or with 4-D floating inputs in channels-last, and/or compiled (`torch.compile`).

    Its state dict is the wrapped module's, keys unchanged, so checkpoints load into the
    unoptimized model and back; attributes it does not have are the wrapped module's.

    `module` is the user's model itself: call it (or export it) for outputs in f32 without
    autocast. `plain_eval = True` makes this wrapper do so in eval mode (`.eval()`): training
    steps keep bf16 and channels-last inputs, evaluation runs as the model was written (bf16's
    logits differ from f32's by its rounding). Default False: evaluation runs as training does.

    With `compile`, the forward call runs `torch.compile(module)`, kept outside the module tree:
    `torch.compile` wraps a module in one whose state dict prefixes every key with `_orig_mod.`,
    which would leak into checkpoints; here the keys stay the model's.
    """

    def __init__(self, module, bf16=False, channels_last=False, plain_eval=False, compile=False):
        super().__init__()
        self.module = module
        self.bf16 = bf16
        self.channels_last = channels_last
        self.plain_eval = plain_eval
        self.compile = compile
        self._set_compiled()

    def _set_compiled(self):
        # Not an attribute nn.Module registers (a plain object attribute): no second copy of
        # the parameters in `named_parameters`, no `_orig_mod.` keys in `state_dict`.
        object.__setattr__(self, "_compiled", torch.compile(self.module) if self.compile else None)

    def forward(self, *args, **kwargs):
        if self.plain_eval and not self.training:
            return self.module(*args, **kwargs)
        run = self._compiled if self._compiled is not None else self.module
        if self.channels_last:
            args, kwargs = tree_map(_channels_last, (args, kwargs))
        if not self.bf16:
            return run(*args, **kwargs)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = run(*args, **kwargs)
        return tree_map(_f32, out)

    def __deepcopy__(self, memo):
        # Everything copied as nn.Module copies it (mode, hooks, attributes) except the compiled
        # function, which does not deep-copy: the copy compiles its own copy of the module.
        import copy

        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = {k: v for k, v in self.__dict__.items() if k != "_compiled"}
        new.__dict__.update(copy.deepcopy(state, memo))
        new._set_compiled()
        return new

    def __getstate__(self):
        # Pickling (torch.save of the whole model, spawn-based workers): the compiled function
        # does not pickle; it is made again on load.
        return {k: v for k, v in self.__dict__.items() if k != "_compiled"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._set_compiled()

    def state_dict(self, *args, **kwargs):
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return self.module.load_state_dict(state_dict, strict=strict, assign=assign)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["module"], name)

    def extra_repr(self):
        return (f"bf16={self.bf16}, channels_last={self.channels_last}, plain_eval={self.plain_eval}, "
                f"compile={self.compile}")
