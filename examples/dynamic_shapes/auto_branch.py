"""Dim.AUTO on both dimensions: export passes, but the branch fixes dim 1 to 32, silently."""

import torch


class Widths(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] == 32:
            return x * 2
        return x + 1


model = Widths()
example_args = (torch.randn(4, 32),)
dynamic_shapes = {"x": {0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO}}
