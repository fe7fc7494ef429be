"""Pairs of rows: the code needs an even batch, which `Dim("n", min=2, max=1024)` does not say.

Plain torch.export.export fails (the guards of `reshape`); torch suggests a derived dimension,
`_n = Dim('_n', min=1, max=512); n = 2*_n`, which keeps `n` dynamic."""

import torch
from torch.export import Dim


class PairRows(torch.nn.Module):
    def forward(self, x):
        pairs = x.reshape(x.shape[0] // 2, 2, x.shape[1])
        return pairs.sum(dim=1)


n = Dim("n", min=2, max=1024)
torch.export.export(PairRows(), (torch.randn(8, 3),), dynamic_shapes={"x": {0: n}})
