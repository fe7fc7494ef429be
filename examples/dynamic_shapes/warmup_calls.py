"""The script runs its model on a few sequence lengths before exporting it on one of them.

Plain torch.export.export passes, static in every size. The warm-up calls varied only the sequence
length (the batch stayed 4): besides a spec with every dimension torch can keep dynamic, ExportLens
offers the one that makes dynamic exactly what varied."""

import torch


class Scorer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.score = torch.nn.Linear(16, 1)

    def forward(self, tokens):
        return self.score(self.embed(tokens)).squeeze(-1).softmax(-1)


model = Scorer().eval()
with torch.no_grad():
    for length in (8, 12, 20):
        model(torch.randint(0, 100, (4, length)))
torch.export.export(model, (torch.randint(0, 100, (4, 16)),))
