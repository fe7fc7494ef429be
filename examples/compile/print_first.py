"""`print` as the very first statement: the break comes before any graph was captured."""

import torch


def step(x):
    print("step called")
    return torch.relu(x) + 1


if __name__ == "__main__":
    fast_step = torch.compile(step)
    fast_step(torch.randn(4))
