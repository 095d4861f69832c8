"""`profilednn.profile(model=…)` marks each submodule's forward with its qualified name
(issue 41: module rows read `Linear_8`, `MultiheadAttention_2`). The reference is the model's
own `named_modules()`; the marks are read from the trace file the profiler wrote."""

import gzip
import json
import os
import tempfile
import unittest

import torch

import profilednn

MARK = "profilednn.module: "


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(8, 8) for _ in range(3)])
        self.act = torch.nn.ReLU()

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x))
        return x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = Head()
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.blocks(x))


def marks(trace):
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if str(e.get("name", "")).startswith(MARK)]


class QualifiedModuleNames(unittest.TestCase):
    def test_every_submodule_is_marked_by_its_qualified_name(self):
        model = Net()
        trace = os.path.join(tempfile.mkdtemp(), "run.trace.json.gz")
        with profilednn.profile(trace=trace, model=model) as prof:
            for _ in range(2):
                model(torch.randn(4, 8)).sum().backward()
                prof.step()
        # Every module but the ModuleList (a container without a forward) runs its forward
        # here; the root is named by its class.
        want = {name or type(m).__name__ for name, m in model.named_modules()
                if not isinstance(m, torch.nn.ModuleList)}
        self.assertIn("blocks.layers.2", want)
        got = marks(trace)
        self.assertEqual({e["name"][len(MARK):] for e in got}, want)
        # Two steps: the ReLU runs 3 times a step, each layer once.
        names = [e["name"][len(MARK):] for e in got]
        self.assertEqual(names.count("blocks.act"), 6)
        self.assertEqual(names.count("blocks.layers.0"), 2)
        # The hooks are gone after the profile.
        for _, m in model.named_modules():
            self.assertFalse(m._forward_hooks or m._forward_pre_hooks)

    def test_without_a_model_nothing_is_marked(self):
        model = Net()
        trace = os.path.join(tempfile.mkdtemp(), "run.trace.json.gz")
        with profilednn.profile(trace=trace) as prof:
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
        self.assertEqual(marks(trace), [])


if __name__ == "__main__":
    unittest.main()
