"""The user's model: a detector from the `minilib` library, wrapped in the project's own module."""

import torch
from minilib import TinyDetector


class App(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.detector = TinyDetector()

    def forward(self, images):
        boxes = self.detector(images)
        return boxes * 2


model = App().eval()
example_args = (torch.tensor([[1.0, 2.0, 0.5, 1.0], [-1.0, -2.0, 0.0, 0.0], [3.0, 0.0, 1.0, 2.0],
                              [2.0, 2.0, 2.0, 2.0], [0.0, -1.0, 0.0, 0.0], [4.0, 1.0, 0.0, 1.0]]),)
