"""torch.compile over a training step whose model skips layers at random (LayerDrop, as wav2vec2's
encoder does): the branch on the draw is inside minilib's loop over its layers, so dynamo breaks the
graph there and then gives up on the encoder's whole `forward`, which runs in eager mode."""

import torch
from minilib.layerdrop import LayerDropModel

model = LayerDropModel()


def train_step(features):
    hidden = model(features)
    return hidden.pow(2).mean()


step = torch.compile(train_step)
step(torch.rand(3, 4))
