"""torch.compile over the project's post-processing: the two minilib functions it calls break the graph, so
dynamo compiles each on its own, and compiles them again when a call brings another number of boxes."""

import torch
from minilib import filter_scores, remove_small_boxes


def postprocess(boxes, scores):
    keep = remove_small_boxes(boxes, 1.0)
    return filter_scores(scores[keep], 0.5)


fast = torch.compile(postprocess)
for count in (4, 6):
    fast(torch.arange(count * 4.0).reshape(count, 4) * torch.tensor([1.0, 1.0, 3.0, 3.0]), torch.linspace(0.2, 0.9, count))
