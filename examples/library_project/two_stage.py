"""Both stages of the library's detector keep boxes with one helper: its guard is reached twice, two ways."""

import torch
from minilib import TwoStageDetector


class App(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.detector = TwoStageDetector()

    def forward(self, boxes, scores):
        return self.detector(boxes, scores)


model = App().eval()
example_args = (torch.rand(5, 4), torch.tensor([0.9, 0.8, 0.7, 0.6, 0.1]))
