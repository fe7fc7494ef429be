"""An encoder with LayerDrop, written as transformers' wav2vec2 encoder is: a random draw per layer
decides, inside the loop over the layers, whether the layer runs (a data-dependent branch in a loop)."""

import torch


class LayerDropEncoder(torch.nn.Module):
    def __init__(self, width: int = 4, depth: int = 2, layerdrop: float = 0.1) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.layerdrop = layerdrop

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = self.training and dropout_probability < self.layerdrop
            if not skip_the_layer:
                hidden = layer(hidden)
        return hidden


class LayerDropModel(torch.nn.Module):
    """A feature projection, then the encoder: the module users call, as `Wav2Vec2ForCTC` is."""

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.projection = torch.nn.Linear(width, width)
        self.encoder = LayerDropEncoder(width)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = self.projection(features)
        return self.encoder(hidden)
