"""Kineto's own lines kept off the user's terminal while `optimize` profiles a step.

torch.profiler's C++ backend (kineto) writes to file descriptor 2 directly, around every
profiler start and stop: "USDT: … profiler_start", "STAGE: … Completed Stage", and on a machine
without a GPU "ERROR: … gpuGetDeviceCount failed". `KINETO_LOG_LEVEL` does not reach the USDT
lines, so descriptor 2 is sent to a temporary file for the duration, and what is not kineto's
(Python warnings, the user's own prints to stderr) is written back afterwards, in order.

Not covered: a process that dies inside the window (a crash in a kernel, `os._exit`) loses what
it wrote to descriptor 2 there, the fatal message included; the window is the profiled step only.
"""

import contextlib
import os
import re
import sys
import tempfile

# kineto's log prefix: SEVERITY:date time pid:tid File.cpp:line]
_KINETO = re.compile(rb"^(USDT|STAGE|INFO|WARNING|ERROR):\d{4}-\d\d-\d\d [\d:.]+ \d+:\d+ \w+\.cpp:\d+\] ")
# kineto's ERROR and WARNING lines are dropped only when they say there is no accelerator:
# those are noise on a CPU; any other is passed on.
_NO_DEVICE = re.compile(rb"gpuGetDeviceCount|[Dd]evice ?[Cc]ount|CUDA|CUPTI|roctracer|XPU")


def _kineto_noise(line):
    m = _KINETO.match(line)
    return bool(m) and (m.group(1) in (b"USDT", b"STAGE", b"INFO") or bool(_NO_DEVICE.search(line)))


@contextlib.contextmanager
def kineto_quiet():
    """Within: descriptor 2 goes to a temporary file; after: its lines that are not kineto's
    noise go to the real stderr. Without a usable descriptor 2 (closed, not a file), nothing
    changes."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        tmp = tempfile.TemporaryFile()
    except OSError:
        os.close(saved)
        yield
        return
    with tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            # Writing back must not hide an exception raised inside: a failure here is dropped.
            try:
                tmp.seek(0)
                kept = b"".join(line for line in tmp if not _kineto_noise(line))
                while kept:
                    kept = kept[os.write(2, kept):]
            except OSError:
                pass
