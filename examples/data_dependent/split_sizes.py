"""Splitting by a size read out of a tensor: only pinning the value makes export pass."""

import torch


class Chunker(torch.nn.Module):
    def forward(self, x, n):
        size = n.item()
        parts = x.split(size)
        return parts[0] * 2


model = Chunker()
example_args = (torch.arange(12.0), torch.tensor(4))
