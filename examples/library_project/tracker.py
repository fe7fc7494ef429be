"""A second model built on the same library: its problems are minilib's, on the same library lines
as detect.py's. The HTML report (`exportlens check examples/ --format html`) shows each of those
lines once, as one root cause shared by both targets."""

import torch
from minilib import TinyDetector


class Tracker(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.detector = TinyDetector(max_keep=3)

    def forward(self, frame):
        detections = self.detector(frame)
        return detections.relu()


model = Tracker().eval()
example_args = (torch.tensor([[2.0, 1.0, 0.5, 1.0], [1.0, 1.0, 1.0, 1.0], [-3.0, 0.0, 1.0, 0.0],
                              [0.5, 0.5, 0.5, 0.5], [3.0, 2.0, 1.0, 0.0]]),)
