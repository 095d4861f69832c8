"""A compiled model's trace from `profilednn.profile`: Inductor's kernels are events by name
(kernel profiling turned on before the first compile), and the trace names the frame each
compiled region runs (`profilednn_compiled_frames`). The references are the module's own code
object (`inspect`) and the ops the model runs."""

import gzip
import inspect
import json
import os
import tempfile
import unittest

import torch

import profilednn


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.lin(x)))


class CompiledTrace(unittest.TestCase):
    def traced(self, module, batches):
        """`module` compiled and trained one step per batch size under `profilednn.profile`:
        the trace as JSON, its path, and the output code beside it (None if none was written)."""
        threads = torch._inductor.config.compile_threads
        torch._inductor.config.compile_threads = 1
        self.addCleanup(setattr, torch._inductor.config, "compile_threads", threads)
        torch._dynamo.reset()
        model = torch.compile(module)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.json")
            try:
                with profilednn.profile(trace=path, model=model, skip=0) as prof:
                    for n in batches:
                        model(torch.randn(n, 16)).sum().backward()
                        prof.step()
            except Exception as e:  # no C++ compiler: Inductor cannot build its kernels
                if any(type(x).__name__ == "InvalidCxxCompiler" for x in (e, e.__cause__)):
                    self.skipTest(f"SKIPPED: Inductor cannot compile here: {e}")
                raise
            with open(path) as f:
                trace = json.load(f)
            code_file = os.path.join(d, "t.inductor.py.gz")
            self.assertEqual(profilednn.capture.code_path(path), code_file)
            code = None
            if os.path.exists(code_file):
                with gzip.open(code_file, "rt") as f:
                    code = f.read()
        return trace, code

    def test_kernels_by_name_and_the_compiled_frame(self):
        if os.environ.get("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE") == "0":
            self.skipTest("SKIPPED: kernel profiling turned off in the environment")
        trace, code = self.traced(Block(), (8, 8))
        self.assertIsNotNone(code, "no output code beside the trace")
        names = {e["name"] for e in trace["traceEvents"] if e.get("ph") == "X"}
        kernels = [n for n in names if n.startswith("graph_") and "_cpp_fused_" in n]
        self.assertTrue(kernels, sorted(names)[:50])
        # Inductor's output code is kept beside the trace: at least this model's forward and
        # backward graph (every graph the process loaded is kept: one compiled before profiling
        # started runs in the traced steps too), each kernel the trace names defined there (its
        # profiling scope carries the trace's name).
        self.assertGreaterEqual(code.count("# profilednn: output code "), 2, code[:300])
        for k in kernels:
            self.assertIn(f'"{k}"', code)
        # The forward's GELU and layer norm fuse into one kernel named after both.
        self.assertTrue(any("gelu" in k and "native_layer_norm" in k for k in kernels), kernels)
        code = Block.forward.__code__
        frame = f"Block.forward ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
        frames = trace.get("profilednn_compiled_frames", "")
        self.assertIn(f"0/0={frame}", frames.split(";"), frames)
        self.assertTrue(any(n.startswith("Torch-Compiled Region: 0/0") for n in names))


    def test_graph_breaks_and_recompilations_go_into_the_trace(self):
        """A `print` in the forward breaks the graph, a new batch size recompiles: Dynamo's
        reasons reach the trace's `profilednn_graph_breaks` and `profilednn_recompiles`."""

        class Printing(Block):
            def forward(self, x):
                h = self.lin(x)
                print("", end="")
                return self.norm(h)

        trace, _ = self.traced(Printing(), (8, 12))
        breaks = trace.get("profilednn_graph_breaks", "")
        self.assertIn("print", breaks)
        count, _ = breaks.split("=", 1)
        self.assertGreaterEqual(int(count), 1)
        recompiles = trace.get("profilednn_recompiles", "")
        self.assertIn("0/1=", recompiles)
        self.assertIn("expected 8, actual 12", recompiles)


if __name__ == "__main__":
    unittest.main()
