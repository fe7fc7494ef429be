"""Indexing with a value read from a tensor: plain torch.export.export passes, while draft export
(run here because this folder asks for it always) crashes in its own fake/real comparison. A hint
says so, with the line it was running."""

import torch


class Pick(torch.nn.Module):
    def forward(self, x, z):
        a = x.item()
        picked = z[a]
        return picked * 2


model = Pick()
example_args = (torch.tensor(2), torch.randn(9))
