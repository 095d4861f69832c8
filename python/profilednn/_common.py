"""Checks shared by the wrappers: the kernels take contiguous CPU tensors of known dtypes."""

import torch

F32, BF16, I64 = 0, 1, 2
_CODES = {torch.float32: F32, torch.bfloat16: BF16}


def dtype_code(t: torch.Tensor, what: str) -> int:
    try:
        return _CODES[t.dtype]
    except KeyError:
        raise TypeError(f"{what}: dtype {t.dtype} is not supported (float32 or bfloat16)") from None


def check_cpu_contiguous(t: torch.Tensor, what: str) -> None:
    if t.device.type != "cpu":
        raise ValueError(f"{what}: expected a CPU tensor, got device {t.device}")
    if not t.is_contiguous():
        raise ValueError(f"{what}: expected a contiguous tensor (call .contiguous())")


def same_layout(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether `a` and `b` (of one shape) put every element at the same offset: their strides
    agree on every dimension longer than 1 (a size-1 dimension's stride moves nothing, and
    autograd hands a depthwise weight [C, 1, k, k] a gradient that differs there)."""
    return a.shape == b.shape and all(n <= 1 or x == y for n, x, y in zip(a.shape, a.stride(), b.stride()))


def traced() -> bool:
    """Whether a tracer may be watching (torch.compile, make_fx, torch.export, a dispatch mode
    such as FakeTensorMode or FlopCounterMode, functorch): then ops go through the dispatcher,
    never straight to the kernels."""
    return (torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() > 0
            or torch._C._are_functorch_transforms_active())


def threads() -> int:
    """Use PyTorch's own intra-op thread count: the kernels run while PyTorch waits."""
    return max(1, torch.get_num_threads())


def torch_libgomp():
    """The libgomp PyTorch's own OpenMP pool runs on (None: not OpenMP, or not found)."""
    import os

    if "OpenMP" not in torch.__config__.parallel_info():
        return None
    torch_dir = os.path.dirname(torch.__file__)
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libgomp" in line}
    except OSError:
        return None
    # PyPI wheels bundle it next to libtorch; a system torch uses the system one.
    mine = sorted(p for p in paths if p.startswith(torch_dir))
    return (mine or sorted(paths) or [None])[0]


def _share_torch_pool():
    """One thread pool for the process: the kernels run on PyTorch's own OpenMP team when
    PyTorch uses libgomp (PyPI's wheels do), instead of std threads competing with its spinning
    workers. PROFILEDNN_OPENMP=0 keeps std threads."""
    import os

    from . import _native

    if os.environ.get("PROFILEDNN_OPENMP", "1") == "0":
        return
    gomp = torch_libgomp()
    if gomp:
        try:
            _native.use_openmp(gomp)
        except ValueError:
            pass


_share_torch_pool()
