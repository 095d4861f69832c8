"""The example scripts build what their flags say (issue 51 item 22: `--size 800` made 800x800
images while RetinaNet's transform resized them to 320x320, silently).

Run: python -m unittest discover -s python/tests -p 'test_examples.py' (needs torch and torchvision).
"""

import importlib.util
import pathlib
import unittest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RetinaNetCaseStudy(unittest.TestCase):
    def test_size_sets_the_model_resolution(self):
        study = load("retinanet_case_study")
        net = study.model(num_classes=5, size=800)
        # torchvision's transform resizes every image to min_size (shorter side) capped by max_size.
        self.assertEqual(tuple(net.transform.min_size), (800,))
        self.assertEqual(net.transform.max_size, 800)
        # What the model actually trains on: an 800x800 image stays 800x800 after the transform.
        import torch

        images, _ = net.transform([torch.rand(3, 800, 800)])
        self.assertEqual(tuple(images.tensors.shape[-2:]), (800, 800))


if __name__ == "__main__":
    unittest.main()
