"""bench/module_circles.py reads the Python package too (issue 53): a circle hidden in
function-level imports is found, and the package has none."""

import importlib.util
import os
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
spec = importlib.util.spec_from_file_location("module_circles", os.path.join(ROOT, "bench", "module_circles.py"))
circles = importlib.util.module_from_spec(spec)
spec.loader.exec_module(circles)


def package(files):
    root = tempfile.mkdtemp()
    pkg = os.path.join(root, "profilednn")
    for rel, text in files.items():
        path = os.path.join(pkg, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return pkg


class PythonCircles(unittest.TestCase):
    def test_a_circle_through_function_level_imports_is_found(self):
        # The shape the issue found: optim and backward_step each importing the other inside a
        # function, with an absolute import and a subpackage's `..` import around them.
        pkg = package({
            "__init__.py": "def optimize():\n    from ._optimize import optimize\n",
            "optim.py": "def wrap():\n    from .backward_step import step\n",
            "backward_step.py": "def step():\n    from profilednn.optim import wrap\n",
            "_optimize/__init__.py": "from ..ops import loss\n",
            "ops.py": "import torch\n",
        })
        found = circles.circles(circles.py_graph(pkg))
        self.assertEqual(found, [[("profilednn", "backward_step"), ("profilednn", "optim")]])
        # A subpackage reaching its parent package's own names is not a circle.
        self.assertNotIn(("profilednn",), circles.py_graph(pkg)[("profilednn", "_optimize")])

    def test_the_package_has_no_circle(self):
        found = circles.circles(circles.py_graph(os.path.join(ROOT, "python", "profilednn")))
        self.assertEqual(found, [], found)


if __name__ == "__main__":
    unittest.main()
