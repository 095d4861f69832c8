"""ProfileDNN's fused CPU training kernels for PyTorch.

`profilednn.ops.sigmoid_focal_loss` is a drop-in for `torchvision.ops.sigmoid_focal_loss`;
`profilednn.optim.SGD`, `AdamW` and `LAMB` are drop-ins for `torch.optim` optimizers.
"""

from . import ops, optim  # noqa: F401
from .capture import profile  # noqa: F401
from ._native import isa  # noqa: F401

__all__ = ["ops", "optim", "isa", "profile"]
