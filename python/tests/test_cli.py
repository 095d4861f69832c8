"""The `profilednn` command installed with the package (`pip install ./python`), and
`profilednn.cpu`, against independent references (the log's own lines, /proc/cpuinfo)."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "retinanet_rnx50_fp32.log.gz"


def installed_command():
    # The console script lands next to this interpreter (a venv's bin/, or the user's scripts).
    return shutil.which("profilednn", path=os.path.dirname(sys.executable)) or shutil.which("profilednn")


class InstalledCommand(unittest.TestCase):
    def setUp(self):
        self.exe = installed_command()
        self.assertIsNotNone(self.exe, "`pip install ./python` should install the profilednn command")

    def test_report_on_the_bundled_example_counts_every_exec_line(self):
        out = subprocess.run([self.exe, "report", str(EXAMPLE), "--format", "json"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        j = json.loads(out.stdout)
        with gzip.open(EXAMPLE, "rt", errors="replace") as f:
            execs = sum(1 for line in f if line.startswith("onednn_verbose,") and ",exec," in line)
        self.assertEqual(j["lines"]["exec"], execs)

    def test_terminal_output_and_exit_status_come_through(self):
        out = subprocess.run([self.exe, "report", str(EXAMPLE)], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("convolution", out.stdout)
        bad = subprocess.run([self.exe, "report", "/nonexistent/x.log"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("/nonexistent/x.log", bad.stderr)
        usage = subprocess.run([self.exe, "no-such-command"], capture_output=True, text=True)
        self.assertEqual(usage.returncode, 2)

    def test_importing_the_command_does_not_import_torch(self):
        code = "import sys, profilednn._cli; print('torch' in sys.modules)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), "False", out.stderr)


def cpuinfo_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


class CpuFeatures(unittest.TestCase):
    def test_bf16_units_agree_with_proc_cpuinfo(self):
        flags = cpuinfo_flags()
        if flags is None:
            self.skipTest("SKIPPED: no /proc/cpuinfo")
        expected = "avx512_bf16" in flags or "amx_bf16" in flags
        env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")}
        code = "import profilednn.cpu as c; u, why = c.bf16_units(); print(u); print(why)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        got, why = out.stdout.splitlines()[:2]
        self.assertEqual(got, str(expected), why)
        print(f"\nthis CPU: bf16 units {expected} ({why})", file=sys.stderr)

    def test_a_onednn_isa_cap_below_bf16_turns_the_units_off(self):
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_VNNI")
        code = "import profilednn.cpu as c; u, why = c.bf16_units(); print(u); print(why)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        got, why = out.stdout.splitlines()[:2]
        self.assertEqual(got, "False", why)

    def test_bf16_pays_is_decided_by_measured_rates(self):
        # Capped below bf16 units: never pays, and nothing is measured.
        env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX512_CORE_VNNI")
        code = "import profilednn.cpu as c; p, why = c.bf16_pays(); print(p); print(why)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        got, why = out.stdout.splitlines()[:2]
        self.assertEqual(got, "False", why)
        self.assertNotIn("measured", why)
        # Uncapped: on a CPU with units the answer quotes the measured ratios, and follows them.
        env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        got, why = out.stdout.splitlines()[:2]
        flags = cpuinfo_flags() or set()
        if not ("avx512_bf16" in flags or "amx_bf16" in flags):
            self.assertEqual(got, "False", why)
            print("\nSKIPPED: no bf16 units, bf16_pays did not measure", file=sys.stderr)
            return
        self.assertIn("measured: GEMM", why)
        self.assertEqual(got == "True", " pays here" in why, why)
        print(f"\nthis CPU: bf16 pays {got} ({why})", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
