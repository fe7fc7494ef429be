"""A Python int argument that changes between calls: torch.compile recompiles on its value."""

import torch


def shift(x, offset):
    return x + offset


if __name__ == "__main__":
    fast_shift = torch.compile(shift)
    x = torch.zeros(3)
    fast_shift(x, 1)
    fast_shift(x, 2)
