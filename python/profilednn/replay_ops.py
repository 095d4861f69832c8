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


# Tensors made so far, by (argument index, shape, strides, dtype): units with the same
# signature share their inputs (a step's ops repeat their shapes layer after layer, so a step of
# thousands of units takes the memory of a few dozen tensors), but the arguments of one call never
# alias each other (a `copy_` of a tensor onto itself does nothing).
_MADE = {}


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
        return _tensor(dims, strides, dtype_of(_DTYPES[typ]), i, layout)
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
    return "Tensor" not in t


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


def _build(unit, what_if):
    bf16 = what_if.get("precision") == "bf16" and unit["name"] in _LOWER
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
        low = (lower and i not in keep) or (propagate and _bf16_activation(unit, i, params))
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

    def __init__(self, units, batch):
        params = set()
        for u in units:
            if u.get("phase") in ("optimizer", "zero_grad"):
                params.update(tuple(d) for d in u["dims"] if isinstance(d, list) and d)
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
        weight when B·T = 4·D)."""
        if unit.get("phase") in ("optimizer", "zero_grad") or self.new == self.old:
            return unit
        u = dict(unit, dims=list(unit["dims"]), strides=list(unit.get("strides", [])),
                 concrete=list(unit.get("concrete", [])))
        scaled = set()
        for i, d in enumerate(u["dims"]):
            t = u["types"][i] if i < len(u["types"]) else ""
            if t not in _DTYPES or not isinstance(d, list) or not d:
                continue
            if strict and tuple(d) in self.params and _DTYPES[t].is_floating_point:
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


def _timed(calls, times, runs):
    """Runs the unit list `runs` times in order; appends each unit's time (ms) to `times`."""
    for _ in range(runs):
        for k, (fn, _) in enumerate(calls):
            if fn is None:
                continue
            t0 = time.perf_counter()
            fn()
            times[k].append((time.perf_counter() - t0) * 1e3)


def _profiled_times(prof, calls, runs):
    """Each unit's times as the profiler recorded them: the duration of the top-level op event
    each call made, the figure the trace's units were logged with (a Python call's own cost, a
    few µs per call, is not in it). `None` when the events do not line up one per call (an op
    whose Python wrapper records more), so that the caller keeps the wall-clock times."""
    events = sorted((e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")),
                    key=lambda e: e.time_range.start)
    live = [k for k, (fn, _) in enumerate(calls) if fn is not None]
    if len(events) != runs * len(live):
        return None
    times = [[] for _ in calls]
    for i, e in enumerate(events):
        times[live[i % len(live)]].append(e.time_range.elapsed_us() / 1e3)
    return times


def run(request):
    threads = request.get("threads")
    if threads:
        torch.set_num_threads(int(threads))
    if request.get("flush_denormal", True):
        torch.set_flush_denormal(True)
    what_if = request.get("what_if") or {}
    _MADE.clear()
    units = request["units"]
    if what_if.get("precision") == "bf16":
        params = set()
        for u in units:
            if u.get("phase") in ("optimizer", "zero_grad"):
                for d in u["dims"]:
                    if isinstance(d, list) and d and all(isinstance(x, int) for x in d):
                        params.add(tuple(d))
                    elif isinstance(d, list):
                        params.update(tuple(x) for x in d if isinstance(x, list))
        what_if = dict(what_if, _params=params)
    try:
        plan = BatchPlan(units, what_if["batch"]) if what_if.get("batch") else None
    except ValueError as e:
        return {"format": "profilednn.torch-replay.v1", "error": str(e)}
    calls = []
    for u in units:
        try:
            if plan is not None:
                try:
                    fn = _build(plan.scale(u), what_if)
                    fn()
                except Exception:  # noqa: BLE001 - an activation of a parameter's shape: below
                    fn = _build(plan.scale(u, strict=False), what_if)
            else:
                fn = _build(u, what_if)
            fn()  # a first call: checks the arguments, warms the op
            calls.append((fn, None))
        except Exception as e:  # noqa: BLE001 - any failure makes the unit unreplayable, with its reason
            reason = e.args[0] if isinstance(e, Unsupported) else f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            calls.append((None, reason))
    runs = max(int(request.get("runs", 5)), 1)
    warmup = int(request.get("warmup", 1))
    _timed(calls, [[] for _ in calls], warmup)
    times = [[] for _ in calls]
    timing = "wall clock"
    if request.get("profiler", True):
        # Under the profiler, as the trace was recorded: each op pays the recording cost its
        # nested ops paid in the logged step, like with like; and its time is read as the
        # trace's was, from its event.
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    record_shapes=True) as prof:
            _timed(calls, times, runs)
        profiled = _profiled_times(prof, calls, runs)
        if profiled is not None:
            times, timing = profiled, "profiler events"
    else:
        _timed(calls, times, runs)
    out = []
    for (fn, reason), ts in zip(calls, times):
        if fn is None:
            out.append({"ms": None, "skipped": reason})
        else:
            out.append({"ms": statistics.median(ts), "skipped": None})
    return {
        "format": "profilednn.torch-replay.v1",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "timing": timing,
        "batch": [plan.old, plan.new] if plan is not None else None,
        "results": out,
    }


def main():
    request = json.load(sys.stdin)
    json.dump(run(request), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
