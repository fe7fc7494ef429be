"""Frozen layers: weights held as buffers, as torchvision's FrozenBatchNorm2d holds its statistics.

A detector's pretrained parts are frozen; here they are also how the model stays the same under
draft export on every torch: torch 2.13's draft export runs the real kernels with garbage in place
of a module's *parameters* (its buffers keep their values), so every data-dependent branch after a
learned layer would go a random way (docs/torch-facts.md §1.6). The weights come from a seed.
"""

import torch
import torch.nn.functional as F
from torch import Tensor


class FrozenConv2d(torch.nn.Module):
    def __init__(self, cin: int, cout: int, kernel_size: int, stride: int, gen: torch.Generator) -> None:
        super().__init__()
        self.stride = stride
        self.register_buffer("weight", torch.randn(cout, cin, kernel_size, kernel_size, generator=gen) * 0.1)
        self.register_buffer("bias", torch.randn(cout, generator=gen) * 0.1)

    def forward(self, x: Tensor) -> Tensor:
        return F.conv2d(x, self.weight, self.bias, stride=self.stride)


class FrozenLinear(torch.nn.Module):
    def __init__(self, cin: int, cout: int, gen: torch.Generator) -> None:
        super().__init__()
        self.register_buffer("weight", torch.randn(cout, cin, generator=gen) * 0.1)
        self.register_buffer("bias", torch.randn(cout, generator=gen) * 0.1)

    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)
