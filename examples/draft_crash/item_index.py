"""Draft export crashes on `z[a]` (a from .item()); plain export fails too, on the branch below it:
that failure, placed by its traceback, is the finding."""

import torch


class Pick(torch.nn.Module):
    def forward(self, x, z):
        a = x.item()
        picked = z[a]
        if a > 2:
            return picked + 1
        return picked


model = Pick()
example_args = (torch.tensor(2), torch.randn(9))
