"""Projection in process: one step of the current configuration recorded with torch.profiler,
its ATen ops replayed through `profilednn.replay_ops` (the helper behind `profilednn replay
--torch-trace`) as recorded and under each what-if, in the same run.

A what-if's projected step is the measured step with the replayed ops' time swapped:
`step − Σ as recorded + Σ what-if`, over the ops both replays ran (the others, and the time
between ops, carried over). Only the what-ifs that change how ops run have a projection here
(bf16, channels-last, threads); the others are measured only.
"""

import contextlib
import json
import os
import tempfile

import torch
from torch.autograd.profiler import record_function

from .. import replay_ops

PHASES = ("forward", "loss", "backward", "optimizer")


def record(runner):
    """The outermost ATen ops of one step of `runner`, as `replay_ops` units, in order."""
    runner.step()  # warm: the recorded step is not the first
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        runner.step(mark=record_function)
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    return units_of(trace)


def units_of(trace):
    """Units from a Chrome trace: on the thread that ran the phases, the ATen ops not inside
    another ATen op, each with the phase whose range holds it."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    phases = [e for e in events if e.get("name", "").startswith("profilednn.phase#")]
    if not phases:
        return []
    tid = phases[0].get("tid")
    ops = sorted((e for e in events if e.get("tid") == tid and e.get("cat") == "cpu_op"
                  and e.get("name", "").startswith("aten::")), key=lambda e: (e["ts"], -e.get("dur", 0)))
    units, end = [], -1.0
    for e in ops:
        if e["ts"] < end:
            continue  # inside the op before
        end = e["ts"] + e.get("dur", 0)
        phase = next((p["name"].split("#", 1)[1] for p in phases
                      if p["ts"] <= e["ts"] <= p["ts"] + p.get("dur", 0)), None)
        if phase is None:
            continue
        a = e.get("args", {})
        units.append({"name": e["name"], "dims": a.get("Input Dims", []), "types": a.get("Input type", []),
                      "strides": a.get("Input Strides", []), "concrete": a.get("Concrete Inputs", []),
                      "phase": phase, "recorded_ms": e.get("dur", 0) / 1e3})
    return units


@contextlib.contextmanager
def _threads_kept():
    n = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(n)
        replay_ops._MADE.clear()


def ratios(units, what_ifs, runs=2):
    """{name: (Σ as-recorded ms, Σ what-if ms, ops counted)} over the ops both replays ran, for
    `what_ifs` = {name: (what_if dict, threads)}; the as-recorded replay (the configuration's
    own what-if and threads) is `what_ifs[None]`."""
    out = {}
    with _threads_kept():
        base_what, base_threads = what_ifs[None]
        base = replay_ops.run({"units": units, "what_if": base_what, "threads": base_threads, "runs": runs,
                               "warmup": 1, "flush_denormal": False})["results"]
        for name, (what_if, threads) in what_ifs.items():
            if name is None:
                continue
            res = replay_ops.run({"units": units, "what_if": what_if, "threads": threads, "runs": runs,
                                  "warmup": 1, "flush_denormal": False})["results"]
            both = [(b["ms"], r["ms"]) for b, r in zip(base, res) if b["ms"] is not None and r["ms"] is not None]
            rec = sum(b for b, _ in both)
            out[name] = (rec, sum(r for _, r in both), len(both))
    return out


def projected_speedup(step_ms, recorded_ms, what_if_ms):
    """The step's speed-up when its replayed ops take `what_if_ms` instead of `recorded_ms`
    (the replayed share is capped at the step: the profiler's own cost is in the replay)."""
    if recorded_ms <= 0 or step_ms <= 0:
        return None
    ops = min(recorded_ms, step_ms)
    projected = step_ms - ops + ops * what_if_ms / recorded_ms
    return step_ms / projected if projected > 0 else None
