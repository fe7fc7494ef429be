"""A custom op without a fake kernel: export cannot know its output shape."""

import torch


@torch.library.custom_op("exportlens_demo::nonzero_rows", mutates_args=())
def nonzero_rows(x: torch.Tensor) -> torch.Tensor:
    return x[x.sum(dim=1) != 0].clone()


class DropEmptyRows(torch.nn.Module):
    def forward(self, x):
        rows = nonzero_rows(x)
        return rows * 2


model = DropEmptyRows()
example_args = (torch.tensor([[1.0, 2.0], [0.0, 0.0], [3.0, 4.0]]),)
