"""Two inputs whose first sizes are tied: `pairs` has twice the rows of `x`.

Plain torch.export.export passes with every size static; torch can keep `x.shape[0]` dynamic and
`pairs.shape[0]` as `2 * x.shape[0]`, a derived dimension."""

import torch


class PairUp(torch.nn.Module):
    def forward(self, x, pairs):
        return torch.cat([x, x]) + pairs


torch.export.export(PairUp(), (torch.randn(3, 8), torch.randn(6, 8)))
