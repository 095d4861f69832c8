"""Both levels of one training run: torch.profiler's trace and oneDNN's verbose log.

    with profilednn.profile() as prof:           # under `profilednn record --torch -- python train.py`
        for batch in loader:
            train_step(batch)
            prof.step()                           # iteration boundary, in both the trace and the log

`profilednn record --torch -o run.log` turns oneDNN verbose mode on (with timestamps) and tells
this helper where to write the trace (`run.trace.json.gz`, next to the log); without it, pass
`trace=` and enable `ONEDNN_VERBOSE=1 ONEDNN_VERBOSE_TIMESTAMP=1` yourself. A trace name ending
in `.gz` is written gzip-compressed (`profilednn report` reads either).

A compiled model makes the profiler's trace huge: a 2-layer GPT under `torch.compile`, traced
over its compiling first step with Python stacks, wrote 4.1 GB and its export took 21 GB of
memory before it was killed; without the compiling step and without stacks it was 10 MB. So:
- `skip=N` leaves the first N steps out of the trace (torch.profiler's own `schedule`), and
  `active=K` records only K steps after them; iteration markers still go to the log every step;
- pass `model=` (the module you train) and a compiled one gets `skip=1` and no Python stacks
  (`modules=False`) unless you say otherwise;
- a trace larger than `max_trace_mb` is reported on stderr with what to change.

With `model=` (an eager one), each submodule's forward is also marked in the trace with its
qualified name from `model.named_modules()` (`profilednn.module: blocks.layers.2.self_attn`):
torch.profiler names modules by class and instance count (`MultiheadAttention_2`, `Linear_8`),
which says nothing of which layer it is, and `profilednn report --torch-trace` shows these names
instead. It needs no Python stacks. A compiled model gets no marks: hooks inside a compiled graph
would break it.

torch.compile's generated kernels are events of the trace, by name (`graph_0_cpp_fused_gelu_
native_layer_norm_0`), only when Inductor generated them with kernel profiling on: `profile()`
turns `torch._inductor.config.cpp.enable_kernel_profile` on (unless
`TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE` says otherwise), so create it before the compiled model's
first call, as `profilednn record --torch` does by setting that variable for the whole program.
"""

import os
import sys

import torch
from torch.profiler import ProfilerActivity


def _compiled(model):
    """Whether `model` is a `torch.compile`d module (or wraps one, as DDP does)."""
    try:
        from torch._dynamo.eval_frame import OptimizedModule
    except Exception:  # an older or stripped torch: nothing is compiled then
        return False
    seen = set()
    while model is not None and id(model) not in seen:
        seen.add(id(model))
        if isinstance(model, OptimizedModule):
            return True
        model = getattr(model, "module", None)
    return False


_MARK = "profilednn.module: "


class _ModuleNames:
    """Forward hooks that open a `record_function` named after each submodule's qualified name
    while its forward runs, and close it after (a forward that raises leaves its range open
    until `remove`)."""

    def __init__(self, model):
        # DDP wraps the model as `.module`: its names would all start with "module.".
        root = model.module if isinstance(
            model, torch.nn.parallel.DistributedDataParallel) else model
        self._open = []
        self._handles = []
        for name, m in root.named_modules():
            label = _MARK + (name or type(m).__name__)
            self._handles.append(m.register_forward_pre_hook(self._enter(label)))
            self._handles.append(m.register_forward_hook(self._leave))

    def _enter(self, label):
        def hook(_module, _inputs):
            r = torch.profiler.record_function(label)
            r.__enter__()
            self._open.append(r)
        return hook

    def _leave(self, _module, _inputs, _output):
        if self._open:
            self._open.pop().__exit__(None, None, None)

    def remove(self):
        while self._open:
            self._open.pop().__exit__(None, None, None)
        for h in self._handles:
            h.remove()
        self._handles = []


def _kernel_profile():
    """Turns Inductor's kernel profiling on (see the module's doc), unless the user set it."""
    if os.environ.get("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE") is not None:
        return
    try:
        import torch._inductor.config as inductor_config
    except Exception:  # a torch without Inductor: nothing is compiled to C++ then
        return
    inductor_config.cpp.enable_kernel_profile = True


_FRAMES_KEY = "profilednn_compiled_frames"


def _compiled_frames(model):
    """The frames torch.compile compiled so far, as `compile_id=what (file:line)` joined by `;`:
    the trace names a compiled region only by its id (`Torch-Compiled Region: 0/0`). `what` is
    the module's qualified name and method (`blocks.0.forward`, the root by its class) when the
    frame is the `forward` of one of `model`'s submodules, else the function's name."""
    if "torch._dynamo" not in sys.modules:  # nothing was compiled (and importing it costs seconds)
        return ""
    try:
        from torch._dynamo.utils import get_compilation_metrics
        metrics = get_compilation_metrics()
    except Exception:  # an older or stripped torch: the regions keep their bare ids
        return ""
    by_code = {}
    root = model
    while root is not None and (hasattr(root, "_orig_mod") or isinstance(
            root, torch.nn.parallel.DistributedDataParallel)):
        root = getattr(root, "_orig_mod", None) or getattr(root, "module", None)
    if isinstance(root, torch.nn.Module):
        for name, m in root.named_modules():
            code = getattr(type(m).forward, "__code__", None)
            if code is not None:
                by_code.setdefault((code.co_filename, code.co_firstlineno), []).append(
                    (name or type(m).__name__, type(m).__name__))
    # A frame of code that several modules share (a graph break in `Block.forward`, run by
    # every block) is named by their class, not by the first of them.
    by_code = {k: (v[0][0] if len(v) == 1 else v[0][1]) for k, v in by_code.items()}
    frames = {}
    for m in metrics:
        cid, co = getattr(m, "compile_id", None), getattr(m, "co_name", None)
        if not cid or not co:
            continue
        where = (getattr(m, "co_filename", None) or "?", getattr(m, "co_firstlineno", None) or 0)
        owner = by_code.get(where)
        what = f"{owner}.{co}" if owner else co
        frames[str(cid)] = f"{what} ({os.path.basename(where[0])}:{where[1]})"
    # `;` and `=` separate entries: keep them (and quotes, which the profiler does not escape
    # twice) out of the names.
    clean = lambda t: t.replace(";", ",").replace("=", "-").replace('"', "'").replace("\\", "/")
    return ";".join(f"{clean(k)}={clean(v)}" for k, v in frames.items())


# Inductor's output code is kept beside the trace up to this size: the kernels' buffers and
# source ops are what `profilednn report --torch-trace` costs them from; the generated C++ of a
# big model runs to megabytes, the rest of the module is small.
_MAX_CODE_MB = 64


def code_path(trace):
    """Where the output code of `trace`'s compiled graphs goes: `run.trace.json.gz` ->
    `run.inductor.py.gz` (`profilednn report` looks there)."""
    for suffix in (".trace.json.gz", ".trace.json", ".json.gz", ".json"):
        if trace.endswith(suffix):
            return trace[: -len(suffix)] + ".inductor.py.gz"
    return trace + ".inductor.py.gz"


def _output_code():
    """The output code of every graph Inductor compiled or loaded in this process, as
    `(path, source)`: the modules PyCodeCache loaded whose source defines `call` (the graph's
    wrapper), which names each kernel, its buffers with their sizes and its source ops. A torch
    without that private cache gives none (the kernels then stay uncosted, and say why)."""
    if "torch._inductor" not in sys.modules:
        return []
    try:
        from torch._inductor.codecache import PyCodeCache
        modules = list(PyCodeCache.modules)
    except Exception:  # an older or newer torch: no output code, said by the report
        return []
    out = []
    for m in modules:
        path = getattr(m, "__file__", None)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, TypeError):
            continue
        if "def call(" in text and "async_compile" in text:
            out.append((path, text))
    return out


def _write_code(trace):
    """Writes the output code beside `trace` (gzip), each module after a `# profilednn: output
    code PATH` line; nothing when nothing was compiled. Too large: said, and cut whole modules
    off at the limit (the report names the kernels left without code)."""
    modules = _output_code()
    if not modules:
        return None
    import gzip
    path, total, kept = code_path(trace), 0, 0
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for src, text in modules:
            total += len(text)
            if total > _MAX_CODE_MB * 1e6:
                print(f"profilednn.profile: Inductor's output code passed {_MAX_CODE_MB} MB: "
                      f"{len(modules) - kept} of {len(modules)} graphs left out of {path}", file=sys.stderr)
                break
            f.write(f"# profilednn: output code {src}\n{text}\n")
            kept += 1
    return path


_BREAKS_KEY = "profilednn_graph_breaks"
_RECOMPILES_KEY = "profilednn_recompiles"


def _clean(text):
    """One line without the separators of the metadata entries (`;`, `=`) or quotes, which the
    profiler does not escape twice."""
    text = " ".join(str(text).split())
    return text.replace(";", ",").replace("=", "-").replace('"', "'").replace("\\", "/")


def _dynamo_events():
    """What Dynamo says of the run: each graph break's reason with its count (its first line
    and its explanation), as `count=reason` joined by `;`; each recompilation's compile id with
    its reason (`0/1=tensor 'x' size mismatch …`). Empty strings when nothing was compiled or the
    private counters are not there."""
    if "torch._dynamo" not in sys.modules:
        return "", ""
    try:
        from torch._dynamo.utils import counters, get_compilation_metrics
        breaks = dict(counters.get("graph_break", {}))
        metrics = get_compilation_metrics()
    except Exception:  # an older or newer torch: the report says nothing of breaks then
        return "", ""
    lines = []
    for reason, n in breaks.items():
        parts = [l.strip() for l in str(reason).splitlines() if l.strip()]
        head = parts[0] if parts else "?"
        why = next((l.split(":", 1)[1].strip() for l in parts if l.startswith("Explanation:")), "")
        lines.append(f"{int(n)}={_clean(head + (': ' + why if why else ''))[:300]}")
    recompiles = []
    for m in metrics:
        cid, why = getattr(m, "compile_id", None), getattr(m, "recompile_reason", None)
        if cid and why:
            recompiles.append(f"{_clean(cid)}={_clean(why)[:300]}")
    return ";".join(lines), ";".join(recompiles)


class profile:
    def __init__(self, trace=None, record_shapes=True, modules=None, skip=None, active=None,
                 model=None, max_trace_mb=256):
        _kernel_profile()
        self.trace = (trace or os.environ.get("PROFILEDNN_TORCH_TRACE")
                      or "profilednn.trace.json.gz")
        compiled = _compiled(model)
        if skip is None:
            skip = 1 if compiled else 0
        if modules is None:
            modules = not compiled
        if skip < 0 or (active is not None and active < 1):
            raise ValueError(f"skip must be >= 0 and active >= 1, not skip={skip}, active={active}")
        self.skip, self.active, self.max_trace_mb = skip, active, max_trace_mb
        schedule = None
        if skip or active:
            # One warm-up step (the profiler's own) is taken out of the skipped ones when there
            # are any: a warm-up-free schedule makes the first active step's figures unreliable.
            warmup = 1 if skip else 0
            schedule = torch.profiler.schedule(
                skip_first=skip - warmup, wait=0, warmup=warmup,
                active=active if active is not None else 1 << 30, repeat=1)
        # nn.Module events of eager models come with Python stacks (`with_stack`).
        self._prof = torch.profiler.profile(
            activities=[ProfilerActivity.CPU], record_shapes=record_shapes, with_stack=modules,
            schedule=schedule)
        self._scheduled = schedule is not None
        self._model = model if model is not None and not compiled else None
        self._root = model
        self._names = None
        self._exported = False
        self.iteration = 0

    def _mark(self):
        # The marker goes through the same stdout as oneDNN's lines, so `record` keeps it; the
        # range "profilednn.iteration#N" gives the trace the same boundary on its own clock
        # (per-iteration tables of `profilednn report --torch-trace`).
        print(f"profilednn,iteration,{self.iteration}", flush=True)
        self._range = torch.profiler.record_function(f"profilednn.iteration#{self.iteration}")
        self._range.__enter__()

    def _close(self):
        if self._range is not None:
            self._range.__exit__(None, None, None)
            self._range = None

    def __enter__(self):
        self._range = None
        if self._model is not None:
            self._names = _ModuleNames(self._model)
        self._prof.__enter__()
        self._mark()
        return self

    def step(self):
        self._close()
        self._prof.step()
        self.iteration += 1
        self._mark()

    def _export(self):
        if self._exported:
            return
        self._exported = True
        # torch.profiler writes gzip itself when the name ends in `.gz`.
        self._prof.export_chrome_trace(self.trace)
        size_mb = os.path.getsize(self.trace) / 1e6
        if size_mb > self.max_trace_mb:
            print(f"profilednn.profile: the trace {self.trace} is {size_mb:.0f} MB: trace fewer steps "
                  f"(active=K), leave the first ones out (skip=N: a compiled model's first step is its "
                  f"compilation), or record without Python stacks (modules=False)", file=sys.stderr)

    def __exit__(self, *exc):
        self._close()
        if self._names is not None:
            self._names.remove()
            self._names = None
        frames = _compiled_frames(self._root)
        if frames and self._prof.profiler is not None:
            # Kineto writes it as a top-level key of the trace, read by `profilednn report`.
            self._prof.add_metadata(_FRAMES_KEY, frames)
            breaks, recompiles = _dynamo_events()
            if breaks:
                self._prof.add_metadata(_BREAKS_KEY, breaks)
            if recompiles:
                self._prof.add_metadata(_RECOMPILES_KEY, recompiles)
        self._prof.__exit__(*exc)
        if self._scheduled and (self._prof.profiler is None or self.iteration <= self.skip):
            # The schedule never reached an active step (the run was shorter than `skip`).
            print(f"profilednn.profile: no step was traced: the run had {self.iteration} step(s) and "
                  f"skip={self.skip}", file=sys.stderr)
            return False
        try:
            self._export()
        except RuntimeError as e:
            print(f"profilednn.profile: no trace written to {self.trace}: {e}", file=sys.stderr)
            return False
        try:
            _write_code(self.trace)
        except OSError as e:
            print(f"profilednn.profile: Inductor's output code not written: {e}", file=sys.stderr)
        return False
