"""A training configuration `optimize` can measure: which of ProfileDNN's changes are on, and
how to build a runnable copy of the user's model, optimizer and loss with them."""

import contextlib
import copy
import dataclasses
import sys
import warnings

import torch

from .._common import same_layout
from .bindings import module_sites, reachable_sites, unique
from .wrapper import OptimizedModule


@dataclasses.dataclass(frozen=True)
class Config:
    fused_optimizer: bool = False
    fold_frozen_bn: bool = False
    fused_focal_loss: bool = False
    channels_last: bool = False
    bf16: bool = False
    threads: int = 1
    step_in_backward: bool = False
    compile: bool = False

    def with_(self, **changes):
        return dataclasses.replace(self, **changes)


def unwrap(model):
    """The module a DistributedDataParallel (or DataParallel) wraps; the model itself else."""
    return getattr(model, "module", model) if type(model).__name__ in ("DistributedDataParallel",
                                                                       "DataParallel") else model


def fused_optimizer(opt):
    """ProfileDNN's optimizer of the same kind over the same parameters, its state carried
    over; or (None, why not)."""
    from .. import optim as po

    if isinstance(opt, (po.SGD, po._AdamLike)):
        return opt, None
    kinds = {torch.optim.SGD: po.SGD, torch.optim.Adam: po.Adam, torch.optim.AdamW: po.AdamW}
    cls = kinds.get(type(opt))
    if cls is None:
        return None, f"{type(opt).__name__} has no fused ProfileDNN equivalent (SGD, Adam, AdamW do)"
    for g in opt.param_groups:
        if g.get("capturable") or g.get("differentiable"):
            return None, "capturable/differentiable steps stay with torch"
        if g.get("decoupled_weight_decay"):
            cls = po.AdamW
        if any(p.is_sparse for p in g["params"]) or any(p.grad is not None and p.grad.is_sparse for p in g["params"]):
            return None, "sparse parameters"
    keys = {po.SGD: ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"),
            po.Adam: ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize"),
            po.AdamW: ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")}[cls]
    groups = [{"params": g["params"], **{k: (float(g[k]) if k == "lr" else g[k]) for k in keys if k in g}}
              for g in opt.param_groups]
    bf16 = any(p.dtype == torch.bfloat16 for g in groups for p in g["params"])
    amsgrad = any(g.get("amsgrad") for g in groups)
    # torch's step on bf16 parameters keeps bf16 state and no master: the same layout here
    # ("none"), the same numerics and bytes, not an f32 master's.
    new = cls(groups, **({"master": "none"} if bf16 and not amsgrad else {}))
    state = opt.state_dict()
    if state["state"]:
        new.load_state_dict(state)
    # The user's group dicts themselves: an LR scheduler (or anything else) made on the old
    # optimizer edits these dicts, and goes on driving the new one.
    for g in opt.param_groups:
        g.setdefault("master", new.defaults["master"])
    new.param_groups = opt.param_groups
    return new, None


def state_like_parameters(opt):
    """Makes every state tensor shaped like its parameter take the parameter's memory layout
    (after the model went channels-last): torch's fused step assumes one element order for
    all the tensors of an update, and computed wrong values otherwise."""
    for p, st in opt.state.items():
        for k, v in list(st.items()):
            if isinstance(v, torch.Tensor) and v.shape == p.shape and v.dim() > 1 and not same_layout(v, p):
                st[k] = torch.empty_like(p, dtype=v.dtype).copy_(v)


def focal_sites(loss_fn=None, model=None):
    """Where torchvision's `sigmoid_focal_loss` is bound: in the loaded modules (its own module,
    `torchvision.ops`, torchvision's RetinaNet head, the user's script), and in what `loss_fn`
    and the forward of `model`'s modules reach (closure cells, defaults, the globals their code
    names, attributes): ([Site], torchvision's function or None)."""
    ops = sys.modules.get("torchvision.ops")
    theirs = getattr(ops, "sigmoid_focal_loss", None) if ops else None
    if theirs is None:
        return [], None
    return unique(module_sites(theirs) + reachable_sites(theirs, _roots(loss_fn, model))), theirs


def _roots(loss_fn, model):
    roots = [loss_fn] if loss_fn is not None else []
    return roots + (list(unwrap(model).modules()) if model is not None else [])


@contextlib.contextmanager
def bound(sites, fn):
    """`fn` bound at `sites` for the duration."""
    old = [s.get() for s in sites]
    for s in sites:
        s.set(fn)
    try:
        yield
    finally:
        for s, o in zip(sites, old):
            s.set(o)


def configure(config, model, optimizer):
    """The changes of `config` to `model` (the module itself, not a DDP wrapper) and its
    optimizer, made in place where they can be (`optimize` measures them on copies, then
    applies them to the user's objects): returns the optimizer to use. Module.to keeps the
    Parameter objects (their data change), so the optimizer's references stay valid; its
    state takes the parameters' layout."""
    if config.fold_frozen_bn:
        from ..nn import fold_frozen_batchnorm

        fold_frozen_batchnorm(model)
    if config.channels_last:
        model.to(memory_format=torch.channels_last)
        state_like_parameters(optimizer)
    if config.fused_optimizer or config.step_in_backward:
        optimizer, _ = fused_optimizer(optimizer)
    if config.step_in_backward:
        from ..backward_step import step_in_backward

        optimizer = step_in_backward(optimizer)
    return optimizer


class Runner:
    """A runnable copy of the training step under one configuration. The copy is the user's
    model and optimizer deep-copied together (the optimizer's state points at the copy's
    parameters), so measuring never touches the user's objects."""

    def __init__(self, config, model, optimizer, loss_fn, example, focal):
        self.config = config
        # Model, optimizer, loss (which may hold parameters of its own) and example copied
        # together: the copied optimizer's state points at the copied parameters, and
        # measuring changes nothing of the user's (plan_only leaves no gradient behind).
        model, optimizer, loss_fn, example = copy.deepcopy((unwrap(model), optimizer, loss_fn, example))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fold's notes, said once when applied
            optimizer = configure(config, model, optimizer)
        if config.bf16 or config.channels_last or config.compile:
            model = OptimizedModule(model, bf16=config.bf16, channels_last=config.channels_last,
                                    compile=config.compile)
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.inputs, self.targets = example
        # `focal` is (sites, ours, theirs): the copies' own bindings added (a loss object's
        # attribute is copied with it; closure cells and globals are shared with the original).
        sites, ours, theirs = focal
        copies = reachable_sites(theirs, _roots(loss_fn, model)) if theirs is not None else []
        self.focal = (unique(sites + copies), ours)

    def forward_loss(self, mark=None):
        """The loss of one forward pass; `mark(name)`, when given, is a context around each
        phase (record_function ranges that name the phases in a recorded step)."""
        mark = mark or (lambda _name: contextlib.nullcontext())
        inputs = self.inputs if isinstance(self.inputs, tuple) else (self.inputs,)
        ctx = bound(*self.focal) if self.config.fused_focal_loss else contextlib.nullcontext()
        with ctx:
            with mark("profilednn.phase#forward"):
                out = self.model(*inputs)
            with mark("profilednn.phase#loss"):
                return self.loss_fn(out, self.targets)

    def step(self, mark=None):
        torch.set_num_threads(self.config.threads)
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.forward_loss(mark)
        mark = mark or (lambda _name: contextlib.nullcontext())
        with mark("profilednn.phase#backward"):
            loss.backward()
        with mark("profilednn.phase#optimizer"):
            self.optimizer.step()
        return loss
