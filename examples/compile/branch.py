"""A branch on a tensor's value inside a compiled module: a graph break (torch.cond fixes it)."""

import torch


class SignGate(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1


if __name__ == "__main__":
    net = torch.compile(SignGate())
    net(torch.ones(3))
