"""An input and a keyword-only mask that share one `Dim("seq")`, and a branch on its size.

Plain torch.export.export fails on the branch only. Draft export, retrying with every dimension
made Dim.AUTO, also reports `mask.shape[1] == x.shape[1]`: its own artefact (they share the Dim)."""

import torch
from torch.export import Dim


class MaskedSum(torch.nn.Module):
    def forward(self, x, *, mask):
        hidden = x * mask
        if x.shape[1] > 8:
            hidden = hidden + 1
        return hidden.sum(dim=1)


seq = Dim("seq", min=2, max=64)
torch.export.export(
    MaskedSum(),
    (torch.randn(2, 32),),
    {"mask": torch.ones(2, 32)},
    dynamic_shapes={"x": {1: seq}, "mask": {1: seq}},
)
