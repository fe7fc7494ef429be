"""A branch on a dynamic size: `seq` is declared 4..64, but the code takes one path only above 16.

Plain torch.export.export fails: the branch narrows `seq` to 17..64. torch suggests
`seq = Dim('seq', min=17, max=64)`, which keeps it dynamic."""

import torch
from torch.export import Dim


class LongOnly(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] > 16:
            return x.softmax(dim=1)
        return x


seq = Dim("seq", min=4, max=64)
torch.export.export(LongOnly(), (torch.randn(2, 32),), dynamic_shapes={"x": {1: seq}})
