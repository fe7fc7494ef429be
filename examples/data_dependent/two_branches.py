"""Two Python branches on tensor values: export can decide neither, and one fix is not enough."""

import torch


class TwoGates(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        if x.max() > 5:
            return x - 5
        return x


model = TwoGates()
example_args = (torch.arange(4.0),)
