"""A dimension marked dynamic that the code fixes to a constant: a constraint violation (torch suggests
`batch = 4`; a torch.cond rewrite of the branch keeps `batch` dynamic)."""

import torch
from torch.export import Dim


class FixedBatch(torch.nn.Module):
    def forward(self, x, y):
        if x.shape[0] == 4:
            return x + y
        return x - y


batch = Dim("batch")
model = FixedBatch()
example_args = (torch.randn(4, 3), torch.randn(4, 3))
dynamic_shapes = {"x": {0: batch}, "y": {0: batch}}
