"""One decode step: one token (`(1, 1)`) with the sequence marked dynamic.

Export specialises every size of 0 or 1 in the example, so plain torch.export.export fails
("specialized it to be a constant (1)"); draft export calls it clean. An example with two tokens
keeps `seq` dynamic."""

import torch
from torch.export import Dim


class DecodeStep(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.proj = torch.nn.Linear(16, 100)

    def forward(self, input_ids):
        hidden = self.embed(input_ids)
        return self.proj(hidden[:, -1])


input_ids = torch.randint(0, 100, (1, 1))
torch.export.export(DecodeStep(), (input_ids,), dynamic_shapes={"input_ids": {1: Dim("seq", max=256)}})
