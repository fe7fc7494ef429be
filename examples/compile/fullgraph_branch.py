"""With fullgraph=True a graph break is an error: the call raises at the break."""

import torch


@torch.compile(fullgraph=True)
def relu_or_negate(x):
    if x.mean() > 0:
        return torch.relu(x)
    return -x


if __name__ == "__main__":
    relu_or_negate(torch.ones(3))
