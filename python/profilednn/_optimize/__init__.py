"""`profilednn.optimize`: one call that applies what pays on this CPU.

Each change ProfileDNN knows is first *projected* (bf16, channels-last and thread counts: one
recorded step's ops replayed in process, as recorded and changed), then *confirmed* by real
training steps of copies of the model and optimizer, the current configuration and the
candidate alternated step by step (like `cudnn.benchmark`). A change is kept only when measured
faster by `margin`, on top of the changes kept before it, so the result is never slower than
what the user had. The user's model and optimizer are changed only at the end, and only with
what was kept.
"""

import random
import statistics
import sys
import time

import torch

from .config import Config, Runner, configure, focal_sites, fused_optimizer, unwrap
from .project import projected_speedup, ratios, record
from .quiet import kineto_quiet
from .schedulers import rebind_schedulers
from .report import Change, Report, ratio
from .wrapper import OptimizedModule

__all__ = ["optimize", "Report", "Change", "OptimizedModule"]

# What a compile is taken to cost before it is measured (a budget check): Inductor compiled the
# examples' small models in 10-40 s on a 2-vCPU Xeon (family 6 model 207).
_COMPILE_GUESS_S = 20.0

# A change projected this much slower is not measured: measured / projected speed-up ranged
# 0.66-1.34 over the changes of optimize_check's models (docs/optimize.md), so one projected
# 1/1.4 = 0.71x would measure at most 0.96x, below the margin.
_NOT_WORTH_MEASURING = 1 / 1.4


class _Progress:
    def __init__(self, on):
        self.on = on

    def __call__(self, msg):
        if self.on:
            print(f"profilednn.optimize: {msg}", file=sys.stderr, flush=True)


def _compare(a, b, steps, warmup):
    """Step times (ms) of runners `a` and `b`, their steps alternated (who goes first alternates
    too), after `warmup` untimed steps each: two lists, pair `i` taken back to back."""
    for _ in range(warmup):
        a.step()
        b.step()
    ta, tb = [], []
    for i in range(steps):
        pair = ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta))
        for r, ts in pair:
            t0 = time.perf_counter()
            r.step()
            ts.append((time.perf_counter() - t0) * 1e3)
    return ta, tb


def _times(runner, steps):
    """Step times (ms) of `runner` alone."""
    ts = []
    for _ in range(steps):
        t0 = time.perf_counter()
        runner.step()
        ts.append((time.perf_counter() - t0) * 1e3)
    return ts


def _verdict(ta, tb, margin):
    """(speed-up of b over a, kept?): the median of the back-to-back pairs' ratios (a drift in
    the machine's speed cancels within a pair), kept when it reaches `margin` and b won at
    least two thirds of the pairs (a single lucky pair on a noisy machine does not decide)."""
    ratios = [x / y for x, y in zip(ta, tb)]
    speedup = statistics.median(ratios)
    if margin <= 0:
        return speedup, True  # keep whatever runs (tests of what the changes do)
    wins = sum(r > 1 for r in ratios)
    return speedup, speedup >= margin and 3 * wins >= 2 * len(ratios)


def _measured(name, proj, ta, tb, margin):
    """The report's line for a change measured as `tb` against `ta`. A change kept only because
    `margin=0` keeps everything (measured no faster: it would not pass at 1.0) says so."""
    speedup, keep = _verdict(ta, tb, margin)
    cur_ms, cand_ms = statistics.median(ta), statistics.median(tb)
    wins = sum(x > y for x, y in zip(ta, tb))
    times = f"{cur_ms:.1f} -> {cand_ms:.1f} ms per step, faster in {wins} of {len(ta)} pairs"
    if not keep:
        return Change(name, False, proj, speedup, f"measured {ratio(speedup, margin)}x ({times}): not "
                                                  f"{ratio(margin)}x faster in two thirds of the pairs")
    if margin <= 0 and not _verdict(ta, tb, 1.0)[1]:
        return Change(name, True, proj, speedup, f"forced (margin=0): measured {ratio(speedup, 1.0)}x, no "
                                                 f"faster ({times})", forced=True)
    return Change(name, True, proj, speedup, times)


def _frozen_bn_pairs(model):
    from ..nn import _candidates, _frozen_bn_type

    t = _frozen_bn_type()
    return len(_candidates(model, t)) if t is not None else 0


def _calls_focal(runner, theirs):
    """Whether one forward and loss of `runner` call torchvision's sigmoid_focal_loss."""
    sites = runner.focal[0]
    from .config import bound

    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return theirs(*args, **kwargs)

    with torch.no_grad(), bound(sites, counting):
        runner.forward_loss()
    return bool(calls)


def _compile_first(runner):
    """Runs `runner`'s first step, which compiles: (its seconds, Dynamo's graph breaks in it)."""
    counters = getattr(getattr(torch, "_dynamo", None), "utils", None)
    counters = getattr(counters, "counters", None)

    def breaks():
        return sum(counters["graph_break"].values()) if counters is not None else 0

    before = breaks()
    t0 = time.perf_counter()
    runner.step()
    return time.perf_counter() - t0, breaks() - before


def _thread_counts(current):
    try:
        import os

        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = torch.get_num_threads()
    return sorted({n for n in (cores, max(1, cores // 2)) if n != current})


CHANGES = ("fused optimizer", "fold frozen batch-norm", "fused focal loss", "channels-last", "bf16 autocast",
           "threads", "torch.compile", "step in backward")


def optimize(model, optimizer, example, loss_fn, *, plan_only=False, budget_s=60.0, margin=1.03, steps=5,
             changes=CHANGES, step_in_backward=False, progress=True):
    """Applies to `model` and `optimizer` the changes that make a training step faster on this
    CPU; returns `(model, optimizer, report)` to use in the training loop as before.

    `example` is `(inputs, targets)` of one step (a tuple `inputs` is passed as positional
    arguments), and `loss_fn(model(inputs), targets)` returns the scalar loss. Considered:
    ProfileDNN's fused optimizer of the same kind (state carried over), the frozen batch-norm
    fold, the fused focal loss (where the model or `loss_fn` calls torchvision's), channels-last,
    bf16 autocast (outputs, hence the loss, in f32), the thread count, and `torch.compile` (last, its
    compile time counted in the budget and reported). A change is kept when
    real steps with it are `margin` times faster than without (the median of back-to-back pairs,
    and faster in two thirds of the pairs), measured alternately within `budget_s` seconds
    (`margin=0` keeps every change that runs); `plan_only=True` decides and reports without changing anything.
    `changes` limits the changes considered (names from `CHANGES`; "threads" stands for every
    other thread count). The optimizer step fused into backward (`profilednn.backward_step`) is
    considered only with `step_in_backward=True`, which says the training loop has no gradient
    clipping by global norm, no gradient accumulation and no closure (it cannot see the loop).

    The returned model is the same object when no change acts on the forward call, else an
    `OptimizedModule` around it whose `state_dict` is the model's (checkpoints load both ways).
    A DistributedDataParallel model is measured through the module it wraps; with more than one
    rank, rank 0 measures and decides alone (the others wait) and every rank applies its
    decisions; the step in backward is refused there. The RNG state, the training mode of every module and (unless a
    thread count is kept) the thread count are left as they were found.
    """
    dist = torch.distributed
    ranks = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    threads0 = torch.get_num_threads()
    from ..ops import sigmoid_focal_loss as ours

    unknown = set(changes) - set(CHANGES)
    if unknown:
        raise ValueError(f"changes: unknown {sorted(unknown)}; known: {list(CHANGES)}")
    decided, error = [None, None], None
    if ranks == 1 or dist.get_rank() == 0:
        try:
            decided = list(_decide(model, optimizer, example, loss_fn, plan_only, budget_s, margin, steps, changes,
                                   step_in_backward and ranks == 1 and unwrap(model) is model, progress))
        except Exception as e:  # noqa: BLE001 - every rank must hear of it, or the others wait forever
            if ranks == 1:
                raise
            error, decided = e, [None, f"{type(e).__name__}: {e}"]
    if ranks > 1:
        dist.broadcast_object_list(decided, src=0)
    if error is not None:
        raise error
    config, report = decided
    if config is None:
        raise RuntimeError(f"profilednn.optimize failed on rank 0: {report}")
    if ranks > 1 or unwrap(model) is not model:
        for c in report.changes:
            if c.name == "step in backward" and not c.applied and step_in_backward:
                c.reason = ("not with DistributedDataParallel or several ranks: the hook would step on the "
                            "local gradient before the all-reduce")
    if plan_only or config == Config(threads=threads0):
        return model, optimizer, report
    model, optimizer = _apply(config, model, optimizer, focal_sites(loss_fn, model)[0], ours)
    return model, optimizer, report


def _decide(model, optimizer, example, loss_fn, plan_only, budget_s, margin, steps, changes, step_in_backward,
            progress):
    """(the configuration to apply, the report), from measuring copies."""
    started = time.monotonic()
    deadline = started + budget_s
    say = _Progress(progress)
    rng, py_rng = torch.get_rng_state(), random.getstate()
    modes = [(m, m.training) for m in model.modules()]
    threads0 = torch.get_num_threads()
    sites, theirs = focal_sites(loss_fn, model)
    from ..ops import sigmoid_focal_loss as ours

    focal = (sites, ours, theirs)
    considered = set(changes)
    changes = []
    try:
        base = Config(threads=threads0)
        say("measuring the step as written")
        baseline = Runner(base, model, optimizer, loss_fn, example, focal)
        t0 = time.perf_counter()
        baseline.step()
        first_ms = (time.perf_counter() - t0) * 1e3
        warmup = 1 if first_ms > 1000 else 2
        steps = max(3, int(steps))
        # Projection: what the replayed ops say of bf16, channels-last and threads.
        projected = {}
        replay_cost = first_ms * 8 / 1e3
        inner = unwrap(model)
        has_conv = any(isinstance(m, torch.nn.Conv2d) for m in inner.modules())
        threads = _thread_counts(threads0)
        what_ifs = {None: ({}, threads0)}
        if "bf16 autocast" in considered:
            what_ifs["bf16 autocast"] = ({"precision": "bf16"}, threads0)
        if has_conv and "channels-last" in considered:
            what_ifs["channels-last"] = ({"layout": "channels-last"}, threads0)
        for n in threads if "threads" in considered else ():
            what_ifs[f"{n} threads"] = ({}, n)
        if len(what_ifs) > 1 and time.monotonic() + replay_cost < started + budget_s / 3:
            say("projecting " + ", ".join(k for k in what_ifs if k) + " from one recorded step")
            try:
                with kineto_quiet():
                    units = record(baseline)
                    r = ratios(units, what_ifs, runs=2)
                projected = {k: (rec, what) for k, (rec, what, _n) in r.items()}
            except Exception as e:  # noqa: BLE001 - a projection failure leaves measuring
                say(f"projection failed ({type(e).__name__}: {e}); measuring only")
        base_ms = None
        current = base

        def fresh(config):
            # Every comparison starts both sides from the user's model and optimizer as given,
            # so that pair i is step i of the same training run under two configurations. A
            # side that had trained longer was at another point of it: the focal-loss head's
            # steps 3-5 drive logits to where gradients are denormal, which slows its
            # convolution's backward 2x, and a fresh candidate set against a runner already past
            # them measured 0.4x (issue 51).
            return Runner(config, model, optimizer, loss_fn, example, focal)

        def candidate(name, change, why_not=None):
            nonlocal current, base_ms
            if (name.endswith(" threads") and "threads" not in considered) or (
                    not name.endswith(" threads") and name not in considered):
                return
            proj = None
            if name in projected:
                rec, what = projected[name]
                proj = projected_speedup(base_ms or first_ms, rec, what)
            if why_not:
                changes.append(Change(name, False, proj, None, why_not))
                return
            if proj is not None and proj < _NOT_WORTH_MEASURING and margin > 0:
                changes.append(Change(name, False, proj, None, f"projected {1 / proj:.2f}x slower: not measured"))
                return
            cost = (warmup + steps) * 2 * (base_ms or first_ms) / 1e3
            compiles = bool(change.get("compile"))
            if time.monotonic() + cost + (_COMPILE_GUESS_S if compiles else 0.0) > deadline:
                changes.append(Change(name, False, proj, None,
                                      f"not measured: the time budget ({budget_s:.0f} s) is spent"))
                return
            say(f"measuring {name} (~{cost:.0f} s{' and the compilation' if compiles else ''})")
            compile_s, breaks = None, 0
            try:
                cur, cand = fresh(current), fresh(current.with_(**change))
                if compiles:
                    compile_s, breaks = _compile_first(cand)
                    cur.step()  # both sides one step on, as pairs must be
                ta, tb = _compare(cur, cand, steps, warmup)
            except Exception as e:  # noqa: BLE001 - a change that fails is not applied, with why
                changes.append(Change(name, False, proj, None, f"failed: {type(e).__name__}: {e}"[:200],
                                      compile_s=compile_s))
                return
            cur_ms, cand_ms = statistics.median(ta), statistics.median(tb)
            if base_ms is None and current == base:
                base_ms = cur_ms
            speedup, keep = _verdict(ta, tb, margin)
            if keep:
                current = current.with_(**change)
            c = _measured(name, proj, ta, tb, margin)
            if compiles:
                c.compile_s = compile_s
                c.reason += (f"; compiled in {compile_s:.1f} s (in the budget; training compiles again at its first step)"
                             + (f", {breaks} graph break(s)" if breaks else ""))
            changes.append(c)

        probe = Runner(base, model, optimizer, loss_fn, example, focal)
        fused, why_opt = fused_optimizer(probe.optimizer)
        already = fused is probe.optimizer
        pairs = _frozen_bn_pairs(inner)
        calls = bool(probe.focal[0]) and _calls_focal(probe, theirs)
        del probe
        todo = [("fused optimizer", {"fused_optimizer": True},
                 why_opt or ("already ProfileDNN's fused optimizer" if already else None)),
                ("fold frozen batch-norm", {"fold_frozen_bn": True},
                 None if pairs else "no FrozenBatchNorm2d after a convolution"),
                ("fused focal loss", {"fused_focal_loss": True},
                 "neither the model nor loss_fn calls torchvision's sigmoid_focal_loss" if not calls else
                 "already ProfileDNN's: torchvision.ops.sigmoid_focal_loss is ProfileDNN's fused loss (an earlier "
                 "optimize() in this process swapped it)" if theirs is ours else None),
                ("channels-last", {"channels_last": True}, None if has_conv else "the model has no 2-D convolution"),
                ("bf16 autocast", {"bf16": True}, None)]
        todo += [(f"{n} threads", {"threads": n}, None) for n in threads]
        todo.append(("torch.compile", {"compile": True}, None))
        todo.append(("step in backward", {"step_in_backward": True},
                     why_opt or (None if step_in_backward else
                                 "opt-in: pass step_in_backward=True when the loop has no gradient clipping, "
                                 "accumulation or closure")))

        def expected(item):
            # Within the budget, the changes projected to pay most go first; those without a
            # projection next; those projected slower after them; torch.compile last of all
            # (on top of every change kept: a comparison with it kept compiles both sides again).
            if item[0] == "torch.compile":
                return 0.0
            if item[0] not in projected:
                return 1.0
            rec, what = projected[item[0]]
            return (rec / what) if what > 0 else 1.0

        for name, change, why_not in sorted(todo, key=lambda item: -expected(item)):
            candidate(name, change, why_not)
        # The whole against the step as written, alternated once more.
        if current != base:
            say("confirming the result against the step as written")
            ta, tb = _compare(fresh(base), fresh(current), steps, warmup)
            base_ms, final_ms = statistics.median(ta), statistics.median(tb)
            if not _verdict(ta, tb, margin)[1]:
                for c in changes:
                    if c.applied:
                        c.applied = False
                        c.reason += "; dropped: all kept changes together measured below the margin"
                current, final_ms = base, base_ms
        else:
            if base_ms is None:
                base_ms = statistics.median(_times(baseline, steps))
            final_ms = base_ms
    finally:
        torch.set_rng_state(rng)
        random.setstate(py_rng)
        for m, mode in modes:
            m.training = mode
        torch.set_num_threads(threads0)
    cpu = _cpu_name()
    report = Report(base_ms, final_ms, changes, cpu=cpu, margin=margin, elapsed_s=time.monotonic() - started,
                    plan_only=plan_only)
    return current, report


def _cpu_name():
    try:
        from .. import _native

        return _native.cpu_features()["model"]
    except Exception:  # noqa: BLE001 - the name is only for the report
        return ""


def _apply(config, model, optimizer, sites, ours):
    """The kept changes, made to the user's own objects."""
    optimizer0 = optimizer
    optimizer = configure(config, unwrap(model), optimizer)
    rebind_schedulers(optimizer0, optimizer)
    if config.fused_focal_loss:
        for s in sites:
            s.set(ours)
    torch.set_num_threads(config.threads)
    if config.bf16 or config.channels_last or config.compile:
        model = OptimizedModule(model, bf16=config.bf16, channels_last=config.channels_last,
                                compile=config.compile)
    return model, optimizer
