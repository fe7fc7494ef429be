"""torch.compile over a function that calls into the library: the graph break is in minilib."""

import torch
from minilib import filter_scores


def rescore(scores):
    return filter_scores(scores, 0.5) + 1


fast = torch.compile(rescore)
fast(torch.rand(8))
