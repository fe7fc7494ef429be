"""A helper module: the problem is here, in another file than the model."""

import torch


def scale_by_count(x: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    k = counts.max().item()
    if k > 3:
        return x * k
    return x
