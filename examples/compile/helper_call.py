"""The compiled function calls a helper from another file; the break is on the helper's line."""

import torch
from clamp_helpers import clip_if_large


@torch.compile(backend="eager")
def normalise(x):
    y = x / 2
    return clip_if_large(y) + 1


if __name__ == "__main__":
    normalise(torch.linspace(-4, 4, 9))
