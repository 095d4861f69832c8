"""Both levels of one training run: torch.profiler's trace and oneDNN's verbose log.

    with profilednn.profile() as prof:           # under `profilednn record --torch -- python train.py`
        for batch in loader:
            train_step(batch)
            prof.step()                           # iteration boundary, in both the trace and the log

`profilednn record --torch -o run.log` turns oneDNN verbose mode on (with timestamps) and tells
this helper where to write the trace (`run.trace.json`, next to the log); without it, pass
`trace=` and enable `ONEDNN_VERBOSE=1 ONEDNN_VERBOSE_TIMESTAMP=1` yourself.
"""

import os

import torch
from torch.profiler import ProfilerActivity


class profile:
    def __init__(self, trace=None, record_shapes=True, modules=True):
        self.trace = trace or os.environ.get("PROFILEDNN_TORCH_TRACE") or "profilednn.trace.json"
        # nn.Module events of eager models come with Python stacks (`with_stack`).
        self._prof = torch.profiler.profile(
            activities=[ProfilerActivity.CPU], record_shapes=record_shapes, with_stack=modules)
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
        self._prof.__enter__()
        self._mark()
        return self

    def step(self):
        self._close()
        self._prof.step()
        self.iteration += 1
        self._mark()

    def __exit__(self, *exc):
        self._close()
        self._prof.__exit__(*exc)
        self._prof.export_chrome_trace(self.trace)
        return False
