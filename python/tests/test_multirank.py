"""A live two-rank run: `profilednn record --ranks -- torchrun --nproc-per-node 2 train_ddp.py`
(Gloo, OMP_NUM_THREADS=1, rank 1 given twice rank 0's batch), checked against the same command
run without `record` and against the run's own lines.

Needs torch (CI installs it); without it the test is skipped with the reason, unless
PROFILEDNN_REQUIRE_TORCH=1 makes that a failure. PROFILEDNN_BIN picks the `profilednn` binary
(default: the command `pip install ./python` installed)."""

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "fixtures" / "multirank" / "train_ddp.py"
ITERS = 3


def have_torch():
    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
    except ImportError as e:
        return str(e)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def profilednn():
    return os.environ.get("PROFILEDNN_BIN") or shutil.which(
        "profilednn", path=os.path.dirname(sys.executable)) or shutil.which("profilednn")


def torchrun(tee=False):
    exe = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    return [exe] + (["--tee", "3"] if tee else []) + [
        "--nproc-per-node", "2", "--master-port", str(free_port()), str(SCRIPT)]


LABEL = re.compile(r"^\[default(\d+)\]:(.*)$")
PIECE = re.compile(r"\[default(\d+)\]:")


def joined_lines(text):
    """The lines of torchrun's output with cut lines joined per rank: torchrun tails each
    rank's file with readline(), which hands out a line's first part without its newline,
    labelled, and the rest later under a label of its own (PYTHONUNBUFFERED makes `print`
    write its text and its newline apart)."""
    pending, out = {}, []
    for line in text.splitlines():
        pieces = [(m.group(1), m.start(), m.end()) for m in PIECE.finditer(line)]
        if not pieces or pieces[0][1] != 0:
            out.append(line)
            continue
        for i, (rank, _, end) in enumerate(pieces):
            stop = pieces[i + 1][1] if i + 1 < len(pieces) else len(line)
            pending[rank] = pending.get(rank, "") + line[end:stop]
        rank = pieces[-1][0]
        out.append(f"[default{rank}]:" + pending.pop(rank))
    out += [f"[default{r}]:{t}" for r, t in pending.items()]
    return out


def per_rank_output(text):
    """Each rank's program output (verbose lines and markers left out), in order."""
    out = {}
    for line in joined_lines(text):
        m = LABEL.match(line)
        if not m or m.group(2).startswith(("onednn_verbose,", "profilednn,iteration")):
            continue
        out.setdefault(int(m.group(1)), []).append(m.group(2))
    return out


def run_launcher(cmd, env, attempts=3):
    """Runs a torchrun command; when a worker dies inside PyTorch itself (torchrun reports a
    ChildFailedError, e.g. exit code -6 of a rank seen once in CI on the reference run without
    `record`), runs it again, printing the first part of the failure's stderr (where the cause
    is) so that it is not lost. Failures of anything else are returned at once."""
    for attempt in range(1, attempts + 1):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode == 0 or "ChildFailedError" not in r.stderr or attempt == attempts:
            return r
        print(f"\ntorchrun failed in PyTorch (attempt {attempt} of {attempts}, exit {r.returncode}); "
              f"stderr begins:\n{r.stderr[:3000]}", file=sys.stderr)


class TwoRanks(unittest.TestCase):
    def setUp(self):
        missing = have_torch()
        if missing:
            if os.environ.get("PROFILEDNN_REQUIRE_TORCH"):
                self.fail(f"PROFILEDNN_REQUIRE_TORCH is set but torch is missing: {missing}")
            self.skipTest(f"SKIPPED: torch is not installed ({missing}); `pip install torch` to run the live two-rank test")
        self.exe = profilednn()
        self.assertIsNotNone(self.exe, "no profilednn command (pip install ./python, or PROFILEDNN_BIN)")
        self.env = dict(os.environ, OMP_NUM_THREADS="1", PROFILEDNN_ITERS=str(ITERS))
        self.dir = Path(tempfile.mkdtemp(prefix="profilednn-multirank-"))

    def tearDown(self):
        if hasattr(self, "dir"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def test_record_and_report_two_ranks(self):
        log = self.dir / "ddp.log.gz"
        # The reference: the same launcher with the flag `--ranks` adds, without `record`.
        direct = run_launcher(torchrun(tee=True), dict(self.env, ONEDNN_VERBOSE="1"))
        self.assertEqual(direct.returncode, 0, direct.stderr[-2000:])
        rec = run_launcher([self.exe, "record", "--ranks", "--no-report", "-o", str(log), "--"] +
                           torchrun(), self.env)
        self.assertEqual(rec.returncode, 0, rec.stderr[-2000:])
        # A clean terminal: no verbose line, no label left without its line.
        for line in rec.stdout.splitlines():
            self.assertNotIn("onednn_verbose", line)
            self.assertIsNone(re.fullmatch(r"(\[default\d+\]:)+", line), line)
        # Each rank's own output exactly as without `record` (ranks interleave differently
        # from run to run, so the comparison is per rank).
        self.assertEqual(per_rank_output(rec.stdout), per_rank_output(direct.stdout))
        self.assertEqual(sorted(per_rank_output(rec.stdout)), [0, 1])

        with gzip.open(log, "rt") as f:
            lines = f.read().splitlines()
        execs = {r: sum(1 for l in lines if l.startswith(f"[default{r}]:onednn_verbose,") and ",exec," in l)
                 for r in (0, 1)}
        rep = subprocess.run([self.exe, "report", str(log), "--format", "json"],
                             capture_output=True, text=True)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        j = json.loads(rep.stdout)
        ranks = {r["rank"]: r for r in j["ranks"]}
        self.assertEqual(sorted(ranks), [0, 1])
        for r in (0, 1):
            self.assertEqual(ranks[r]["calls"], execs[r])
            self.assertEqual(ranks[r]["iterations"], ITERS)
            self.assertEqual(ranks[r]["threads"], 1)
            self.assertIsNone(ranks[r]["stopped_early"])
        self.assertEqual((ranks[0]["mini_batch"], ranks[1]["mini_batch"]), (16, 32))
        im = j["rank_logs"][0]["imbalance"]
        # Which rank is slower is a timing: printed, not asserted.
        print(f"\n  two-rank run: rank 0 {ranks[0]['time_ms_per_iteration']:.3f} ms/iteration "
              f"(wall {ranks[0]['wall_ms_per_iteration']}), rank 1 {ranks[1]['time_ms_per_iteration']:.3f} "
              f"ms/iteration (wall {ranks[1]['wall_ms_per_iteration']}); straggler rank {im['straggler']}, "
              f"{im['ratio']:.2f}x the median", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
