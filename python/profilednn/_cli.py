"""The `profilednn` console script: the Rust command line, run in this process.

`pip install ./python` builds the command into the extension module, so kernels and command
come from one install: `profilednn record --torch -- python train.py` works right after it.
"""

import os
import signal
import sys


def main() -> None:
    from . import _native

    # Behave like the binary: Ctrl-C stops the command (Python's handler would only run once
    # control returns to Python); SIGPIPE stays ignored, as in the binary, so a closed pipe is
    # a write error the command turns into a quiet exit with status 0.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    # `replay --torch-trace` replays framework ops with this interpreter, which has torch (a
    # venv's python resolves to its base interpreter, which may not: hence sys.executable).
    os.environ["PROFILEDNN_RUNNING_PYTHON"] = sys.executable
    _native.cli(["profilednn", *sys.argv[1:]])  # exits the process with the command's status


if __name__ == "__main__":
    main()
