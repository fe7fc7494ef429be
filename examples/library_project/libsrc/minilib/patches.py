"""Patch embeddings written the way vision-transformer libraries write them (timm's PatchEmbed).

`FixedPatchEmbed` checks the image size it was built for, as timm does by default; export then
fixes height and width to that size. `DynamicPatchEmbed` accepts any size divisible by the patch
(timm's `dynamic_img_size=True`); export then needs dimensions that are multiples of 16.
"""

import torch


class FixedPatchEmbed(torch.nn.Module):
    def __init__(self, img_size: int = 32, patch: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.img_size = (img_size, img_size)
        self.proj = torch.nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        H, W = x.shape[2], x.shape[3]
        torch._assert(H == self.img_size[0], f"Input height ({H}) doesn't match model ({self.img_size[0]}).")
        torch._assert(W == self.img_size[1], f"Input width ({W}) doesn't match model ({self.img_size[1]}).")
        return self.proj(x).flatten(2).transpose(1, 2)


class DynamicPatchEmbed(torch.nn.Module):
    def __init__(self, patch: int = 16, dim: int = 8) -> None:
        super().__init__()
        self.patch = patch
        self.proj = torch.nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        H, W = x.shape[2], x.shape[3]
        torch._assert(H % self.patch == 0, f"Input height ({H}) should be divisible by patch size ({self.patch}).")
        torch._assert(W % self.patch == 0, f"Input width ({W}) should be divisible by patch size ({self.patch}).")
        return self.proj(x).flatten(2).transpose(1, 2)
