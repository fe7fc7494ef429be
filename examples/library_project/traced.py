"""torch.jit.trace over a model whose detection head comes from the library: minilib turns tensors into Python values."""

import torch
from minilib import DetectionHead


class Detector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = DetectionHead()

    def forward(self, boxes):
        return self.head(boxes * 2)


model = Detector().eval()
boxes = torch.tensor([[1.0, 1.0, 4.0, 3.0], [2.0, 0.0, 1.0, 5.0], [0.0, 0.0, 2.0, 2.0], [3.0, 1.0, 6.0, 2.0]])
traced = torch.jit.trace(model, (boxes,))
