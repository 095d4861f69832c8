"""What `optimize` did: each change considered, applied or not, with its projected and
measured speed-ups and the reason."""

import dataclasses
from typing import List, Optional


@dataclasses.dataclass
class Change:
    name: str
    applied: bool
    projected_speedup: Optional[float]
    measured_speedup: Optional[float]
    reason: str
    # Kept only because `margin=0` keeps every change that runs: measured no faster.
    forced: bool = False
    # torch.compile: the first step's seconds (the compilation), counted in the budget.
    compile_s: Optional[float] = None


def ratio(v, against=None):
    """`v` with 2 decimals, or as many more (up to 6) as it takes to tell it from `against`
    (the margin it was compared with): 1.028 against 1.03 reads "1.028", not "1.03"."""
    if v is None:
        return "-"
    for d in range(2, 7):
        if against is None or v == against or f"{v:.{d}f}" != f"{against:.{d}f}":
            return f"{v:.{d}f}"
    return f"{v:.6f}"


def _x(v, against=None):
    return "-" if v is None else f"{ratio(v, against)}x"


# What the `projected` speed-ups are: the whole step, not oneDNN's part of it (issue 52's one
# headline), so that they compare with the measured ones.
PROJECTED = ("the whole step: one step recorded here, its ops replayed as the change runs them and "
             "swapped into the measured step (the time between ops carried over)")

# The schema of `Report.to_dict()` (docs/optimize-json.md), as every ProfileDNN document names its own.
FORMAT = "profilednn.optimize.v1"


@dataclasses.dataclass
class Report:
    baseline_step_ms: float
    optimized_step_ms: float
    changes: List[Change]
    cpu: str = ""
    margin: float = 1.03
    elapsed_s: float = 0.0
    plan_only: bool = False

    def to_dict(self):
        return {"format": FORMAT, "baseline_step_ms": self.baseline_step_ms, "optimized_step_ms": self.optimized_step_ms,
                "projected": PROJECTED, "changes": [dataclasses.asdict(c) for c in self.changes]}

    def __str__(self):
        speedup = self.baseline_step_ms / self.optimized_step_ms if self.optimized_step_ms else 1.0
        verb = "would take" if self.plan_only else "takes"
        rule = (f"a change is kept when measured >= {ratio(self.margin)}x faster" if self.margin > 0 else
                "margin=0: every change that runs is kept, those measured no faster marked forced")
        lines = [f"profilednn.optimize on {self.cpu or 'this CPU'} ({self.elapsed_s:.0f} s): a step "
                 f"{verb} {self.optimized_step_ms:.1f} ms instead of {self.baseline_step_ms:.1f} ms "
                 f"({speedup:.2f}x); {rule}"]
        width = max([len(c.name) for c in self.changes] + [6])
        lines.append(f"  {'change':<{width}}  {'applied':<7}  {'projected':>9}  {'measured':>8}  reason")
        margin = self.margin if self.margin > 0 else None
        for c in self.changes:
            applied = ("forced" if c.forced else "would" if self.plan_only else "yes") if c.applied else "no"
            lines.append(f"  {c.name:<{width}}  {applied:<7}  {_x(c.projected_speedup):>9}  "
                         f"{_x(c.measured_speedup, margin):>8}  {c.reason}")
        if any(c.projected_speedup is not None for c in self.changes):
            lines.append(f"  projected = {PROJECTED}")
        return "\n".join(lines)
