"""ProfileDNN's fused CPU training kernels for PyTorch.

`profilednn.ops.sigmoid_focal_loss` is a drop-in for `torchvision.ops.sigmoid_focal_loss`;
`profilednn.optim.SGD`, `AdamW` and `LAMB` are drop-ins for `torch.optim` optimizers.
`profilednn.nn.fold_frozen_batchnorm(model)` folds torchvision's FrozenBatchNorm2d into the
convolutions before them (the paper's frozen batch-norm fix). `profilednn.cpu` says what this
CPU runs natively (bf16 units or not). `profilednn.optimize(model, optimizer, example, loss_fn)`
applies the changes that measure faster on this CPU (`profilednn._optimize`). The `profilednn` command (the same as the Rust binary) is
installed with the package.
"""

import importlib as _importlib

__all__ = ["ops", "optim", "nn", "isa", "profile", "cpu", "optimize"]


def __getattr__(name):
    # Submodules load on first use: the `profilednn` console script (`_cli`) starts without
    # importing PyTorch; `profilednn.ops`, `.optim`, `.profile` bring it in.
    if name in ("ops", "optim", "nn", "cpu"):
        return _importlib.import_module(f".{name}", __name__)
    if name == "optimize":
        from ._optimize import optimize

        return optimize
    if name == "profile":
        from .capture import profile

        return profile
    if name == "isa":
        from ._native import isa

        return isa
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
