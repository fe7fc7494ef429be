"""An op defined with torch.library.define and a CPU kernel, but no fake kernel."""

import torch

torch.library.define("exportlens_demo::twice", "(Tensor x) -> Tensor")


@torch.library.impl("exportlens_demo::twice", "cpu")
def _twice_cpu(x):
    return x * 2


class Doubler(torch.nn.Module):
    def forward(self, x):
        return torch.ops.exportlens_demo.twice(x) + 1


model = Doubler()
example_args = (torch.ones(3),)
