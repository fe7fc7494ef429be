"""A model zoo: library models built by factories that examples/pyproject.toml names under
[tool.exportlens] targets, the way a zoo of torchvision detectors is checked.

No line of this file runs while these models export (minilib's code is the whole forward), so each
problem goes where its factory builds the model: the `model = ...` line, or the model in the
`return`. One finding per library line, with minilib's line related and named in the data; two
guards of one model stay two on its line. The HTML report (`exportlens check examples/ --format
html`) shows minilib/postprocess.py:8 as one root cause of every target that reaches it, the
script-form ones of library_project/ included.
"""

import torch
from minilib import TinyDetector, TwoStageDetector

IMAGES = torch.tensor([[1.0, 2.0, 0.5, 1.0], [-1.0, -2.0, 0.0, 0.0], [3.0, 0.0, 1.0, 2.0], [2.0, 2.0, 2.0, 2.0], [4.0, 1.0, 0.0, 1.0]])


def small_detector():
    model = TinyDetector(max_keep=2)
    model.eval()
    return model, (IMAGES,)


def wide_detector():
    return {"model": TinyDetector(max_keep=5).eval(), "example_args": (IMAGES,)}


def two_stage_detector():
    scores = torch.tensor([0.9, 0.8, 0.7, 0.6, 0.1])
    return {"model": TwoStageDetector(), "example_args": (torch.rand(5, 4), scores)}
