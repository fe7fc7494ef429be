"""A model that exports cleanly with a dynamic batch (its width is fixed): ExportLens reports nothing here."""

import torch


class TinyMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


model = TinyMLP()
example_args = (torch.randn(3, 4),)
dynamic_shapes = {"x": {0: torch.export.Dim("batch")}}
