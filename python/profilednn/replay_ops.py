"""Times a training step's framework ops through PyTorch itself: the helper behind
`profilednn replay LOG --torch-trace TRACE`.

The CLI picks one steady iteration of the trace and sends its *units* (the outermost ATen ops,
in order, with the shapes, strides, types and scalar values the profiler recorded) as JSON on
stdin; this module rebuilds each call's arguments, runs the whole list as a sequence (each op
finds the caches the ops before it left, as in training), and prints one JSON document on
stdout: each unit's median time, or why it could not be run.

Why PyTorch and not oneDNN: the ops of a transformer step that matter most (f32 GEMMs in the
BLAS, flash attention and element-wise ops in ATen, the optimizer's for-loop) have no oneDNN
primitive at all, and the what-ifs (bf16 autocast, another thread count) change *where* PyTorch
runs them (a bf16 linear becomes a oneDNN matmul): only PyTorch itself answers that.

Run stand-alone (`python -m profilednn.replay_ops < units.json`); it needs only torch.
"""

import ast
import contextlib
import json
import math
import re
import statistics
import sys
import time

import torch

# The profiler's `Input type` names (c10's type names) as dtypes.
_DTYPES = {
    "float": torch.float32,
    "double": torch.float64,
    "c10::BFloat16": torch.bfloat16,
    "c10::Half": torch.float16,
    "long int": torch.int64,
    "int": torch.int32,
    "short int": torch.int16,
    "signed char": torch.int8,
    "unsigned char": torch.uint8,
    "bool": torch.bool,
}

# Ops that the bf16 what-if runs in bf16, as autocast's lower-precision list does on CPU (the
# GEMM family, attention, convolutions).
_LOWER = {
    "aten::linear", "aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm", "aten::matmul",
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
    "aten::conv_transpose2d", "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    "aten::addbmm", "aten::prelu",
}


# Of those, the ones that take parameters (f32 in the model, cast to bf16 by autocast at every
# forward call): in forward they run under autocast with the recorded f32 tensors, so that the
# casts are priced; the others (whose inputs are activations, already bf16 in a bf16 run), and
# every op of backward (autograd's bf16 tensors), take bf16 tensors directly.
_WITH_PARAMETERS = {
    "aten::linear", "aten::addmm", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::convolution", "aten::_convolution", "aten::conv_transpose2d", "aten::prelu",
}


# The trace's `autocast` of a unit (the type its f32 arguments were cast to inside).
_AUTOCAST = {"bf16": torch.bfloat16, "f16": torch.float16}


# Arguments that stay f32 in a bf16 run: flash attention's logsumexp (its backward's 6th).
_KEEP_F32 = {"aten::_scaled_dot_product_flash_attention_for_cpu_backward": {5}}


class Unsupported(Exception):
    """A unit whose call cannot be rebuilt from what the profiler recorded."""


def _scalar(text):
    if text in ("", "None"):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


# Tensors made so far, by ((argument index, generation), shape, strides, dtype): units with the same
# signature share their inputs (a step's ops repeat their shapes layer after layer, so a step of
# thousands of units takes the memory of a few dozen tensors), but the arguments of one call never
# alias each other (a `copy_` of a tensor onto itself does nothing).
_MADE = {}


def _optimizer_generations(units):
    """For each unit, the generation of tensors it takes (`_tensor`'s key): 0, but in the
    optimizer phase a new one each time a call repeats one made since the last new generation
    (same op, shapes and scalars: the next parameter's turn in a for-loop optimizer). Shared
    across parameters of one shape, the optimizer's tensors stayed in the caches where the real
    step streams through every parameter, gradient and state once: a ResNet-50's optimizer phase
    replayed 38 % under its recorded time (33.0 → 20.3 ms; a GPT's 45 %). One parameter's own
    calls (momentum, then the update with it) still share their tensors, as the real ones do."""
    gens, gen, seen = [], 0, set()
    for u in units:
        if u.get("phase") != "optimizer":
            gens.append(0)
            continue
        sig = (u["name"], repr(u.get("dims")), repr(u.get("strides")), repr(u.get("concrete")))
        if sig in seen:
            gen, seen = gen + 1, set()
        seen.add(sig)
        gens.append(gen)
    return gens


def _channels_last(dims, strides):
    """The strides of `dims` (4-D) in channels-last order, when `strides` are the contiguous
    NCHW ones (a view of another layout is left as recorded)."""
    if len(dims) != 4:
        return strides
    n, c, h, w = dims
    contiguous = [c * h * w, h * w, w, 1]
    if strides and list(strides) != contiguous:
        return strides
    return [h * w * c, 1, w * c, c]


def _tensor(dims, strides, dtype, index=None, layout=None):
    if dims is None:
        raise Unsupported("a tensor argument without shape")
    if layout == "channels-last" and dtype.is_floating_point:
        strides = _channels_last(dims, strides)
    key = (index, tuple(dims), tuple(strides) if strides else None, dtype)
    if index is not None and key in _MADE:
        return _MADE[key]
    t = _new_tensor(dims, strides, dtype)
    if index is not None:
        _MADE[key] = t
    return t


def _new_tensor(dims, strides, dtype):
    n = 1
    for d in dims:
        n *= max(int(d), 0)
    if strides and len(strides) == len(dims) and all(isinstance(s, int) for s in strides):
        size = 1 + sum((d - 1) * s for d, s in zip(dims, strides) if d > 0) if n else 0
        base = torch.empty(max(size, 1), dtype=dtype)
        t = base.as_strided(dims, strides)
    else:
        base = t = torch.empty(dims, dtype=dtype)
    if dtype.is_floating_point:
        # Positive values: an optimizer's sqrt or a log of a negative would run on NaNs, which
        # some kernels take slow paths for.
        base.uniform_(0.1, 1.0)
    else:
        base.zero_()
    return t


def _arg(i, unit, dtype_of, layout=None):
    dims = unit["dims"][i] if i < len(unit["dims"]) else None
    typ = unit["types"][i] if i < len(unit["types"]) else ""
    concrete = unit["concrete"][i] if i < len(unit.get("concrete", [])) else ""
    strides = unit["strides"][i] if i < len(unit.get("strides", [])) else None
    if typ in _DTYPES:
        # Keyed by argument index and the unit's generation (`_optimizer_generations`).
        return _tensor(dims, strides, dtype_of(_DTYPES[typ]), (i, unit.get("_generation", 0)), layout)
    if typ == "TensorList":
        dtype = dtype_of(torch.float32)
        return [_tensor(d, None, dtype) for d in (dims or [])]
    if typ in ("Scalar", "ScalarList"):
        return _scalar(concrete)
    if typ == "":
        return _scalar(concrete)
    raise Unsupported(f"argument {i} of type {typ!r}")


def _fits(t, v):
    """Whether the value `v` can be passed where the schema's type `t` (as the schema's Python
    binding spells it: `Tensor`, `Optional[Tensor]`, `List[Tensor]`, `float`, …) is."""
    if v is None:
        # An absent optional argument (`Tensor? attn_mask`, `float? scale`).
        return t.startswith("Optional[")
    if t.startswith("Optional["):
        t = t[len("Optional["):-1]
    if isinstance(v, torch.Tensor):
        return t == "Tensor"
    if isinstance(v, list) and v and isinstance(v[0], torch.Tensor):
        return t in ("List[Tensor]", "List[Optional[Tensor]]")
    if "Tensor" in t:
        return False
    # The profiler records a cast's dtype as an int (`x.to(torch.bfloat16)`: 15); without these
    # checks aten::to.device (Tensor, Device, ScalarType, ...) took it as its device, and the call
    # failed with "Expected a value of type 'Device' ... found type 'int'".
    return _SCALAR_FITS.get(t, lambda _: True)(v)


# What a recorded scalar may be for the schema types a wrong pick confuses; other types (a
# `number`, lists) take any non-tensor value, as before.
_SCALAR_FITS = {
    "Device": lambda v: isinstance(v, (str, torch.device)),
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int),
    "SymInt": lambda v: isinstance(v, int),
    "float": lambda v: isinstance(v, (int, float)),
    "str": lambda v: isinstance(v, str),
}


def _overload(name, args):
    """The overload of `name` whose schema takes `args` positionally (tensor where a tensor is)."""
    ns, _, op = name.partition("::")
    if ns != "aten":
        raise Unsupported("not an ATen op")
    packet = getattr(torch.ops.aten, op, None)
    if packet is None:
        raise Unsupported("no such ATen op here")
    candidates = []
    for ov in packet.overloads():
        schema = getattr(packet, ov)._schema
        # The profiler records keyword-only arguments (`alpha` of add_) in schema order too.
        params = list(schema.arguments)
        if len(params) < len(args):
            continue
        ok = True
        ok = all(_fits(str(a.type), v) for a, v in zip(params, args))
        if ok and all(p.has_default_value() for p in params[len(args):]):
            candidates.append((ov != "default", ov.endswith("out"), getattr(packet, ov), params))
    if not candidates:
        raise Unsupported("no overload matches the recorded arguments")
    candidates.sort(key=lambda c: (c[1], c[0]))
    _, _, fn, params = candidates[0]
    kw = {p.name: v for p, v in zip(params, args) if p.kwarg_only}
    pos = [v for p, v in zip(params, args) if not p.kwarg_only]
    return lambda: fn(*pos, **kw)


# Ops that keep their recorded types in the bf16 what-if even on bf16 activations: casts and
# copies (their types are the point), and those autocast's CPU fp32 list computes in f32 (the
# losses).
_KEEP_RECORDED = {
    "aten::to", "aten::_to_copy", "aten::copy_", "aten::clone", "aten::cross_entropy_loss", "aten::nll_loss",
    "aten::nll_loss_nd", "aten::nll_loss_forward", "aten::nll_loss_backward", "aten::nll_loss2d_forward",
    "aten::nll_loss2d_backward", "aten::mse_loss", "aten::mse_loss_backward", "aten::binary_cross_entropy",
    "aten::binary_cross_entropy_with_logits", "aten::smooth_l1_loss", "aten::l1_loss", "aten::huber_loss",
    "aten::kl_div",
}


def _bf16_activation(unit, i, params):
    """Whether argument `i` of `unit` is, in a bf16 autocast run, a bf16 activation: a 4-D
    tensor of forward or backward that is not a parameter (`params`: the shapes the
    optimizer touches). A convolution's bf16 output stays bf16 through the batch norms,
    activations, pools and residual adds after it, in both directions; in a transformer the
    residual stream (3-D, promoted to f32 by the f32 embedding added to it) stays f32, so only
    4-D tensors are taken."""
    if unit.get("phase") not in ("forward", "loss", "backward") or unit["name"] in _KEEP_RECORDED:
        return False
    dims = unit["dims"][i] if i < len(unit["dims"]) else None
    return (isinstance(dims, list) and len(dims) == 4 and all(isinstance(x, int) for x in dims)
            and tuple(dims) not in params)


def _build(unit, what_if, flow_args=frozenset()):
    """The call of `unit` under `what_if`; `flow_args`: the arguments the bf16 what-if's dtype
    flow (`AutocastFlow`) makes bf16 activations."""
    # Autocast covers forward and loss (backward follows their dtypes); the optimizer's step
    # and the data loading run outside it, in the precision they were recorded in, whatever
    # ops they call (a GEMM in a second-order optimizer stays f32).
    bf16 = (what_if.get("precision") == "bf16" and unit["name"] in _LOWER
            and unit.get("phase", "forward") in ("forward", "loss", "backward"))
    autocast = bf16 and unit["name"] in _WITH_PARAMETERS and unit.get("phase") in ("forward", "loss")
    lower = bf16 and not autocast
    # A call that ran under autocast as recorded (its f32 arguments cast inside: the trace's
    # `autocast`) runs under it again, in the precision it was cast to.
    recorded = _AUTOCAST.get(unit.get("autocast")) if unit["name"] in _LOWER else None
    cast_to = torch.bfloat16 if autocast else recorded
    # The other ops of a bf16 run: their 4-D activations are bf16 (see _bf16_activation).
    params = what_if.get("_params")
    propagate = what_if.get("precision") == "bf16" and params is not None and unit["name"] not in _LOWER

    keep = _KEEP_F32.get(unit["name"], set())

    def dtype_for(i):
        low = ((lower and i not in keep) or (propagate and _bf16_activation(unit, i, params))
               or i in flow_args)
        return lambda d: torch.bfloat16 if low and d == torch.float32 else d

    n = max(len(unit["dims"]), len(unit["types"]))
    args = [_arg(i, unit, dtype_for(i), what_if.get("layout")) for i in range(n)]
    # Trailing absent optionals are left to their defaults.
    while args and args[-1] is None and (len(unit["types"]) >= len(args) and unit["types"][len(args) - 1] == ""):
        args.pop()
    call = _overload(unit["name"], args)
    if cast_to is not None:
        def in_autocast():
            with torch.autocast("cpu", dtype=cast_to):
                return call()
        return in_autocast
    return call


# Autocast's CPU fp32 list among the losses: their input is cast to f32 first (`_KEEP_RECORDED`).
_F32_LOSSES = _KEEP_RECORDED - {"aten::to", "aten::_to_copy", "aten::copy_", "aten::clone"}

# Unary ops whose bf16 input gives a bf16 output, and the op autograd runs for each in backward.
_UNARY_BACKWARD = {
    "aten::gelu": "aten::gelu_backward", "aten::relu": "aten::threshold_backward",
    "aten::silu": "aten::silu_backward", "aten::tanh": "aten::tanh_backward",
    "aten::sigmoid": "aten::sigmoid_backward", "aten::hardswish": "aten::hardswish_backward",
    "aten::leaky_relu": "aten::leaky_relu_backward", "aten::elu": "aten::elu_backward",
    "aten::mish": "aten::mish_backward", "aten::hardtanh": "aten::hardtanh_backward",
    "aten::dropout": "aten::native_dropout_backward",
    "aten::native_dropout": "aten::native_dropout_backward",
}


def _ints(d):
    return isinstance(d, list) and bool(d) and all(isinstance(x, int) for x in d)


def _float_args(unit):
    """(index, shape) of the unit's floating tensor arguments."""
    for i, d in enumerate(unit["dims"]):
        t = unit["types"][i] if i < len(unit["types"]) else ""
        if t in _DTYPES and _DTYPES[t].is_floating_point and _ints(d):
            yield i, tuple(d)


def _lower_output(unit):
    """The output shape of a GEMM-family call (None for the others: convolutions, attention)."""
    d = unit["dims"]
    name = unit["name"]
    try:
        if name == "aten::linear":
            return tuple(d[0][:-1]) + (d[1][0],)
        if name in ("aten::mm", "aten::addmm"):
            a, b = (d[1], d[2]) if name == "aten::addmm" else (d[0], d[1])
            return (a[0], b[1])
        if name in ("aten::bmm", "aten::matmul"):
            return tuple(d[0][:-1]) + (d[1][-1],)
    except (IndexError, TypeError):
        return None
    return None


# Ops that give a view or a reshaped copy of their input (its dtype kept).
_VIEWS = {
    "aten::view", "aten::reshape", "aten::_unsafe_view", "aten::transpose", "aten::permute",
    "aten::contiguous", "aten::t", "aten::expand", "aten::flatten", "aten::unflatten", "aten::split",
    "aten::chunk", "aten::unsqueeze", "aten::squeeze", "aten::select", "aten::slice",
}

# A bf16 chain through a view: the shape is no longer followed.
_ANY = "any"


class AutocastFlow:
    """The bf16 what-if's dtypes beyond autocast's op lists, and the casts it adds, read off
    the recorded f32 step in order (a trace records shapes, not which tensor feeds which op, so
    the flow follows shapes from one op to the next).

    - A unary op (GELU, ReLU, …) right after a GEMM-family op, on a tensor of that op's output
      shape, runs on its bf16 output and gives bf16 (the chain goes on through further unary
      ops); its backward op, on the same shape, runs in bf16 too. A binary op (the residual
      add) ends the chain: one of its operands is f32 and the result is promoted.
    - Casts a real bf16 step has and an f32 trace lacks, added as `aten::to` calls (a real
      trace's name for them):
      - each f32 parameter an autocast GEMM cast to bf16 in forward has its bf16 gradient cast
        back to f32 in backward (autograd's `ToCopyBackward0`), and so has its f32 activation
        input (a layer norm's output; not the step's data, which comes before any other
        floating-point op and has no gradient, nor a bf16 chain, nor a 4-D activation, bf16
        after a convolution);
      - a residual add of a bf16 chain to the f32 stream casts the bf16 operand's gradient
        back to bf16;
      - a loss of autocast's fp32 list whose input holds as many elements as the last
        GEMM-family output casts that bf16 output to f32 before it, and its gradient back to
        bf16 at the start of backward.

      A layer's backward casts go after the backward GEMM that gives its weight's gradient (by
      output shape; else at the end of backward). The weight gradients are kept to the end of
      the iteration, as `param.grad` is. Checked against real bf16 autocast traces of the
      GPT-style fixture and the MLP: the same backward casts, shape for shape."""

    def __init__(self, units, params):
        self.args = {}  # unit index -> the argument indices that are bf16 activations
        self.casts = []  # (insert before unit index, phase, shape, from, to, keep)
        unary_seen = set()  # (the backward op, shape) of each unary op on the bf16 chain
        chain = None  # the shape of the bf16 output the previous forward op gave, if any
        chain_layer = None  # the layer (in `layers`) whose GEMM began the chain
        chain_params = False  # that GEMM took parameters (a projection, not attention's)
        last_lower = None
        floating_seen = False  # a floating-point forward op ran before (else a GEMM's input is data)
        layers = []  # per autocast GEMM with parameters: its backward casts [(shape, from, to, keep)]
        bf16, f32 = torch.bfloat16, torch.float32
        backward = [j for j, v in enumerate(units) if v.get("phase") == "backward"]
        if any(u.get("autocast") for u in units):
            # Recorded under autocast already: its casts and bf16 ops are in the trace.
            return
        for k, u in enumerate(units):
            name, phase = u["name"], u.get("phase")
            if phase == "backward":
                floats = list(_float_args(u))
                if floats and (name, floats[0][1]) in unary_seen:
                    self.args[k] = {i for i, d in floats if d == floats[0][1]}
                continue
            if phase not in ("forward", "loss"):
                chain = None
                continue
            floats = list(_float_args(u))
            if name in _LOWER:
                if name in _WITH_PARAMETERS and not u.get("autocast"):
                    # Parameters recorded in f32 only (a model already in bf16 casts nothing).
                    casts = [(d, bf16, f32, True) for i, d in floats
                             if d in params and u["types"][i] == "float"]
                    # Its f32 activation input, cast to bf16 here, has its gradient cast back
                    # (data, before any floating-point op, has no gradient; a bf16 chain no cast).
                    casts += [(d, bf16, f32, False) for _, d in floats[:1]
                              if d not in params and floating_seen and chain not in (d, _ANY)
                              and len(d) != 4]
                    layers.append(casts)
                    chain_layer = len(layers) - 1
                chain = _lower_output(u) or _ANY
                chain_params = name in _WITH_PARAMETERS
                last_lower = chain
                floating_seen = True
                continue
            if floats:
                floating_seen = True
            if name in _F32_LOSSES and last_lower is not None:
                if floats and (last_lower == _ANY or math.prod(floats[0][1]) == math.prod(last_lower)):
                    shape = floats[0][1]
                    self.casts.append((k, phase, shape, bf16, f32, False))
                    first_bwd = next((j for j in backward if j > k), None)
                    if first_bwd is not None:
                        self.casts.append((first_bwd, "backward", shape, f32, bf16, False))
                chain = None
                continue
            acts = [(i, d) for i, d in floats if d not in params]
            if chain is not None and name in _VIEWS:
                # A view of attention's output (SDPA's, or a `bmm`/`matmul` of hand-written
                # attention) is bf16 still; a view of a projection's output (a GEMM with
                # parameters) ends the chain: the q, k and v projections are views of one
                # another's shape, while each reads the f32 layer-norm output.
                chain = None if chain_params and chain != _ANY else _ANY
                continue
            if chain is not None and name in _UNARY_BACKWARD and len(acts) == 1 and chain in (acts[0][1], _ANY):
                self.args[k] = {acts[0][0]}
                unary_seen.add((_UNARY_BACKWARD[name], acts[0][1]))
                chain = acts[0][1]
                continue
            if chain is not None and chain_layer is not None and len(acts) == 2 and all(d == chain for _, d in acts):
                # A residual add of the bf16 chain to the f32 stream: promoted to f32, and the
                # gradient of the bf16 operand cast back to bf16 in backward.
                layers[chain_layer].append((chain, f32, bf16, False))
            chain = None
        # Each layer's gradient casts after the backward GEMM that gives its weight's (a 2-D
        # shape), last layer first; else at the end of backward.
        claimed = set()
        gemms = [j for j, v in enumerate(units)
                 if v.get("phase") == "backward" and v["name"] in ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul")]
        end = backward[-1] + 1 if backward else len(units)
        for casts in reversed(layers):
            at = end
            weights = [d for d, _, _, keep in casts if keep and len(d) == 2]
            for j in gemms:
                if j not in claimed and _lower_output(units[j]) in weights:
                    claimed.add(j)
                    at = j + 1
                    break
            self.casts.extend((at, "backward", d, src, dst, keep) for d, src, dst, keep in casts)
        self.casts.sort(key=lambda c: c[0])


def _cast_call(shape, src, dst):
    t = torch.empty(shape, dtype=src).uniform_(0.1, 1.0)
    return lambda: t.to(dst)


# The GEMM family's matrix products (their arguments: activations, at most one parameter).
_GEMMS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::baddbmm", "aten::addbmm"}


class BatchPlan:
    """The `--batch N` what-if on recorded calls: which tensors carry the batch, and how.

    The rule, since a trace records shapes but not which dimension is the batch: a training
    step's activations (and their gradients, indices, targets) hold the batch in their
    outermost dimension in memory, while parameters, gradients of parameters and optimizer
    state (the shapes the optimizer's ops touch) do not hold it at all. The recorded batch is
    the commonest outermost dimension of the forward ops' other tensors; each such tensor whose
    outermost dimension is a multiple of it (`B`, or `B·T` once flattened) is scaled by
    `N / B`, and so is a size list (`view`, `reshape`, `expand`) whose first entry was such a
    dimension. Scaling is exact for GEMMs, attention and element-wise ops; a call it makes
    inconsistent fails and keeps its logged time (said so)."""

    def __init__(self, units, batch, parameters=()):
        # The optimizer's shapes (a tensor list's each) and the request's parameters.
        params = _params(units, parameters)
        counts = {}
        for u in units:
            if u.get("phase") != "forward":
                continue
            for d, st in self._tensors(u):
                if tuple(d) not in params:
                    o = self._outer(d, st)
                    counts[d[o]] = counts.get(d[o], 0) + 1
        if not counts:
            raise ValueError("--batch: no forward op with an activation tensor in the iteration")
        self.old = max(sorted(counts), key=lambda k: counts[k])
        if self.old < 2:
            raise ValueError(f"--batch: the recorded batch reads as {self.old}: it cannot be told apart")
        self.new = int(batch)
        self.params = params
        # The outermost sizes that carry the batch: B, and B times the next dimension of a
        # tensor that starts with B (`B·T` once [B, T, D] is flattened to [B·T, D]); a mere
        # multiple of B (a sequence of 128 when B is 8) does not.
        self.values = {self.old}
        for u in units:
            if u.get("phase") != "forward":
                continue
            for d, st in self._tensors(u):
                order = self._order(d, st)
                if len(d) > 1 and d[order[0]] == self.old:
                    self.values.add(self.old * d[order[1]])

    @staticmethod
    def _tensors(u):
        for i, d in enumerate(u["dims"]):
            t = u["types"][i] if i < len(u["types"]) else ""
            if t in _DTYPES and isinstance(d, list) and d and all(isinstance(x, int) for x in d):
                st = u["strides"][i] if i < len(u.get("strides", [])) else None
                yield d, st

    @staticmethod
    def _order(dims, strides):
        """Dimension indices, outermost in memory first (size-1 dimensions last)."""
        if strides and len(strides) == len(dims):
            return sorted(range(len(dims)), key=lambda k: (dims[k] <= 1, -strides[k], k))
        return list(range(len(dims)))

    @classmethod
    def _outer(cls, dims, strides):
        return cls._order(dims, strides)[0]

    def scale(self, unit, strict=True):
        """A copy of `unit` with its batch scaled; the unit itself when nothing changes.
        `strict`: a floating tensor of a parameter's shape is taken for a parameter and left
        alone; the caller retries with `strict=False` when that made the call inconsistent (an
        activation that happens to have a parameter's shape: [B·T, D] against a [4·D, D]
        weight when B·T = 4·D). A GEMM never multiplies two parameters: when two of its
        matrices have parameters' shapes, each whose outermost dimension carries the batch is
        taken for an activation (a 256 → 256 layer's backward `mm([B·T, 256], [256, 256])`
        when B·T = 1024 and another layer's weight is [1024, 256]: the call stays consistent
        unscaled, so the retry would not catch it)."""
        if unit.get("phase") in ("optimizer", "zero_grad") or self.new == self.old:
            return unit
        u = dict(unit, dims=list(unit["dims"]), strides=list(unit.get("strides", [])),
                 concrete=list(unit.get("concrete", [])))
        param_like = [i for i, d in _float_args(u) if d in self.params and len(d) >= 2]
        two_params = unit["name"] in _GEMMS and len(param_like) >= 2
        scaled = set()
        for i, d in enumerate(u["dims"]):
            t = u["types"][i] if i < len(u["types"]) else ""
            if t not in _DTYPES or not isinstance(d, list) or not d:
                continue
            if strict and tuple(d) in self.params and _DTYPES[t].is_floating_point and not (two_params and i in param_like):
                continue
            st = u["strides"][i] if i < len(u["strides"]) else None
            o = self._outer(d, st)
            if d[o] not in self.values:
                continue
            nd = list(d)
            nd[o] = d[o] // self.old * self.new
            scaled.add(d[o])
            u["dims"][i] = nd
            if st and len(st) == len(d):
                # The same order in memory, contiguous.
                order = sorted(range(len(d)), key=lambda k: (-st[k], k))
                ns, step = [0] * len(d), 1
                for k in reversed(order):
                    ns[k] = step
                    step *= max(nd[k], 1)
                u["strides"][i] = ns
        for i, c in enumerate(u["concrete"]):
            v = _scalar(c) if isinstance(c, str) else None
            if isinstance(v, list) and v and isinstance(v[0], int) and (v[0] in scaled or v[0] in self.values):
                v[0] = v[0] // self.old * self.new
                u["concrete"][i] = str(v)
        return u


def _timed(seq, times, runs):
    """Runs `seq` (in order: (call, slot, keep)) `runs` times; appends each call's time (ms) to
    `times[slot]`. The outputs of `keep` calls (gradients) live until the next run starts, as
    `param.grad` lives until the next iteration's `zero_grad`."""
    for _ in range(runs):
        kept = []
        for fn, slot, keep in seq:
            t0 = time.perf_counter()
            out = fn()
            times[slot].append((time.perf_counter() - t0) * 1e3)
            if keep:
                kept.append(out)
            del out


def _profiled_times(prof, seq, slots, runs):
    """Each call's times as the profiler recorded them: the duration of the top-level op event
    each call made, the figure the trace's units were logged with (a Python call's own cost, a
    few µs per call, is not in it). `None` when the events do not line up one per call (an op
    whose Python wrapper records more), so that the caller keeps the wall-clock times."""
    events = sorted((e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")),
                    key=lambda e: e.time_range.start)
    if len(events) != runs * len(seq):
        return None
    times = [[] for _ in range(slots)]
    for i, e in enumerate(events):
        times[seq[i % len(seq)][1]].append(e.time_range.elapsed_us() / 1e3)
    return times


def _params(units, parameters=()):
    """The shapes the optimizer touches (parameters, their gradients and state), and
    `parameters`: the request's, autograd's `AccumulateGrad` nodes, which name them also when
    the optimizer is not made of ATen ops (a fused optimizer of another library)."""
    params = {tuple(p) for p in parameters}
    for u in units:
        if u.get("phase") in ("optimizer", "zero_grad"):
            for d in u["dims"]:
                if _ints(d):
                    params.add(tuple(d))
                elif isinstance(d, list):
                    params.update(tuple(x) for x in d if isinstance(x, list))
    return params


def run(request):
    threads = request.get("threads")
    if threads:
        torch.set_num_threads(int(threads))
    if request.get("flush_denormal", True):
        torch.set_flush_denormal(True)
    what_if = request.get("what_if") or {}
    _MADE.clear()
    units = request["units"]
    flow = None
    if what_if.get("precision") == "bf16":
        what_if = dict(what_if, _params=_params(units, request.get("parameters", ())))
        try:
            flow = AutocastFlow(units, what_if["_params"])
        except (KeyError, IndexError, TypeError, ValueError):
            # A request without the fields the flow reads (one written by hand): no casts added.
            flow = None
    try:
        plan = (BatchPlan(units, what_if["batch"], request.get("parameters", ()))
                if what_if.get("batch") else None)
    except ValueError as e:
        return {"format": "profilednn.torch-replay.v1", "error": str(e)}
    calls = []
    for k, (u, gen) in enumerate(zip(units, _optimizer_generations(units))):
        u = dict(u, _generation=gen) if gen else u
        flow_args = flow.args.get(k, frozenset()) if flow is not None else frozenset()
        try:
            if plan is not None:
                try:
                    fn = _build(plan.scale(u), what_if, flow_args)
                    fn()
                except Exception:  # noqa: BLE001 - an activation of a parameter's shape: below
                    fn = _build(plan.scale(u, strict=False), what_if, flow_args)
            else:
                fn = _build(u, what_if, flow_args)
            fn()  # a first call: checks the arguments, warms the op
            calls.append((fn, None))
        except Exception as e:  # noqa: BLE001 - any failure makes the unit unreplayable, with its reason
            reason = e.args[0] if isinstance(e, Unsupported) else f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            calls.append((None, reason))
    # The casts the what-if adds (`AutocastFlow`), each with a slot after the units'.
    added = []
    for at, phase, shape, src, dst, keep in (flow.casts if flow is not None else []):
        if plan is not None and not keep and shape[0] in plan.values:
            shape = (shape[0] // plan.old * plan.new,) + tuple(shape[1:])
        added.append((at, phase, shape, src, dst, keep, _cast_call(shape, src, dst)))
    # The order run: each added call before the unit it was placed at (or at the end).
    before = {}
    for i, a in enumerate(added):
        before.setdefault(a[0], []).append((a[6], len(calls) + i, a[5]))
    seq = []
    for k in range(len(calls) + 1):
        seq.extend(before.get(k, []))
        if k < len(calls) and calls[k][0] is not None:
            seq.append((calls[k][0], k, False))
    slots = len(calls) + len(added)
    runs = max(int(request.get("runs", 5)), 1)
    warmup = int(request.get("warmup", 1))
    _timed(seq, [[] for _ in range(slots)], warmup)
    times = [[] for _ in range(slots)]
    timing = "wall clock"
    if request.get("profiler", True):
        # Under the profiler, as the trace was recorded: each op pays the recording cost its
        # nested ops paid in the logged step, like with like; and its time is read as the
        # trace's was, from its event.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    record_shapes=True) as prof:
            _timed(seq, times, runs)
        profiled = _profiled_times(prof, seq, slots, runs)
        if profiled is not None:
            times, timing = profiled, "profiler events"
    else:
        _timed(seq, times, runs)
    out = []
    for (fn, reason), ts in zip(calls, times):
        if fn is None:
            out.append({"ms": None, "skipped": reason})
        else:
            out.append({"ms": statistics.median(ts), "skipped": None})
    casts = [{
        "name": "aten::to",
        "phase": phase,
        "dims": list(shape),
        "from": str(src).replace("torch.", ""),
        "to": str(dst).replace("torch.", ""),
        "ms": statistics.median(times[len(calls) + i]),
    } for i, (_, phase, shape, src, dst, _, _) in enumerate(added)]
    return {
        "format": "profilednn.torch-replay.v1",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "timing": timing,
        "batch": [plan.old, plan.new] if plan is not None else None,
        "results": out,
        "added": casts,
    }


def main():
    request = json.load(sys.stdin)
    json.dump(run(request), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
