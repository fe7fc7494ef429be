"""The benchmark transformer with a data-dependent branch in its third block (a clamp applied only
when activations blow up): plain torch.export.export fails there, draft export goes on."""

import torch
from torch.export import Dim
from transformer import TinyGPT


class GuardedGPT(TinyGPT):
    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i == 2 and x.abs().max() > 100:
                x = x.clamp(-100, 100)
        return self.head(self.norm(x))


torch.manual_seed(0)
model = GuardedGPT().eval()
example_args = (torch.randint(0, 1000, (4, 64)),)
dynamic_shapes = {"ids": {0: Dim("batch", min=1, max=64)}}
