"""A Python branch on a value read out of a tensor: export cannot decide it."""

import torch


class Threshold(torch.nn.Module):
    def forward(self, x, y):
        n = x.item()
        if n > 2:
            return y * 2
        return y - 1


if __name__ == "__main__":
    ep = torch.export.export(Threshold(), (torch.tensor(5), torch.ones(3)))
    print(ep)
