"""Image models built on minilib's patch embeddings, exported with dynamic height and width.

`FixedSize` uses the embedding that checks its image size: with Dim.AUTO, export passes but fixes
height and width to 32 inside the library. `AnySize` uses the one that needs multiples of 16: with
`Dim("h", min=32, max=512)` export fails, and torch suggests `h = 16*_h`."""

import torch
from minilib import DynamicPatchEmbed, FixedPatchEmbed
from torch.export import Dim


class FixedSize(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = FixedPatchEmbed()

    def forward(self, images):
        tokens = self.embed(images)
        return tokens.mean(dim=1)


class AnySize(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = DynamicPatchEmbed()

    def forward(self, images):
        tokens = self.embed(images)
        return tokens.mean(dim=1)


images = torch.randn(2, 3, 32, 32)
torch.export.export(FixedSize(), (images,), dynamic_shapes={"images": {2: Dim.AUTO, 3: Dim.AUTO}})

h = Dim("h", min=32, max=512)
w = Dim("w", min=32, max=512)
torch.export.export(AnySize(), (images,), dynamic_shapes={"images": {2: h, 3: w}})
