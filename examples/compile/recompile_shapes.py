"""A new input length on every call with dynamic=False: one recompile per shape, then the limit."""

import torch


@torch.compile(dynamic=False)
def double(x):
    return x * 2


if __name__ == "__main__":
    for n in range(1, 11):
        double(torch.ones(n))
