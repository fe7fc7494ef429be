"""`copy.deepcopy` of a tensor: torch reports the break inside copy.py; the user's line is here."""

import copy

import torch


@torch.compile
def snapshot(x):
    saved = copy.deepcopy(x)
    return saved + x


if __name__ == "__main__":
    snapshot(torch.ones(2, 2))
