"""`.item()` under torch.compile breaks the graph unless capture_scalar_outputs is set."""

import torch


@torch.compile
def scale_by_mean(x):
    m = x.mean().item()
    return x * m


if __name__ == "__main__":
    scale_by_mean(torch.arange(4.0))
