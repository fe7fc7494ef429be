"""A fake kernel that disagrees with the real one: export passes, the program is wrong."""

import torch


@torch.library.custom_op("exportlens_demo::to_double", mutates_args=())
def to_double(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float64) * 2


@to_double.register_fake
def _(x):
    return torch.empty_like(x)


class Widen(torch.nn.Module):
    def forward(self, x):
        return to_double(x) + 1


model = Widen()
example_args = (torch.randn(2, 3),)
