"""ProfileDNN's fused CPU training kernels for PyTorch.

`profilednn.ops.sigmoid_focal_loss` is a drop-in for `torchvision.ops.sigmoid_focal_loss`;
`profilednn.optim.SGD`, `AdamW` and `LAMB` are drop-ins for `torch.optim` optimizers.
"""

from . import ops, optim  # noqa: F401
from .capture import profile  # noqa: F401
from ._native import isa  # noqa: F401
from . import _native
from ._common import torch_libgomp

# One thread pool for the process: the kernels run on PyTorch's own OpenMP team when PyTorch
# uses libgomp (PyPI's wheels do), instead of std threads competing with its spinning workers.
# PROFILEDNN_OPENMP=0 keeps std threads.
import os as _os

if _os.environ.get("PROFILEDNN_OPENMP", "1") != "0":
    _gomp = torch_libgomp()
    if _gomp:
        try:
            _native.use_openmp(_gomp)
        except ValueError:
            pass

__all__ = ["ops", "optim", "isa", "profile"]
