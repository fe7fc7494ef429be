"""An MLP as a module-level target: the batch could be dynamic, the feature width cannot.

Plain torch.export.export passes; the program accepts only 4 rows. The first layer's weight fixes
the width at 32."""

import torch


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))

    def forward(self, features):
        return self.layers(features)


model = MLP()
example_args = (torch.randn(4, 32),)
