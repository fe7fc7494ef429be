"""A model fed one dict holding a tensor and a list of tensors, exported without `dynamic_shapes`.

Plain torch.export.export passes; every size is fixed to the example's. The batch is shared by every
tensor, and each has a length of its own."""

import torch


class Pooled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, batch):
        tokens = self.proj(batch["tokens"]).mean(1)
        extra = sum(t.mean(1, keepdim=True) for t in batch["extra"])
        return tokens + extra


batch = {"tokens": torch.randn(2, 5, 8), "extra": [torch.randn(2, 7), torch.randn(2, 3)]}
torch.export.export(Pooled(), (batch,))
