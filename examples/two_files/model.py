"""The model lives here; the data-dependent guard is in layers.py."""

import torch
from layers import scale_by_count


class Scaled(torch.nn.Module):
    def forward(self, x, counts):
        return scale_by_count(x, counts) + 1


model = Scaled()
example_args = (torch.ones(2, 2), torch.tensor([1, 5, 2]))
