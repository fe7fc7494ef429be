"""A small CNN exported on one 3-channel image: the batch, the height and the width could be dynamic.

Plain torch.export.export passes; the program accepts only `(1, 3, 64, 64)`. The channels are fixed
by the first convolution's weight; a batch of 1 is always specialised, so keeping the batch dynamic
also needs an example batch of 2."""

import torch


class ConvNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.Conv2d(8, 16, 3, padding=1),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.head = torch.nn.Linear(16, 10)

    def forward(self, images):
        return self.head(self.features(images).flatten(1))


model = ConvNet().eval()
ep = torch.export.export(model, (torch.randn(1, 3, 64, 64),))
