"""A detection head written the way SSD-style libraries are: Python numbers, branches and loops over tensors.

Fine in eager mode. Under torch.jit.trace each of them is fixed to what the example input gave (a
TracerWarning each), and the dict the head returns is refused by the tracer's strict mode.
"""

import torch


def scale_boxes(boxes: torch.Tensor) -> torch.Tensor:
    if boxes.max() > 1:
        boxes = boxes / boxes.max()
    return boxes


def anchor_grid(boxes: torch.Tensor) -> torch.Tensor:
    count = int(boxes.shape[0])
    return torch.arange(count, dtype=boxes.dtype)


def box_scores(boxes: torch.Tensor) -> torch.Tensor:
    scores = []
    for box in boxes:
        if box[2] > box[0]:
            scores.append(box.sum())
        else:
            scores.append(box.sum() * 0)
    return torch.stack(scores)


class DetectionHead(torch.nn.Module):
    def forward(self, boxes: torch.Tensor) -> dict[str, torch.Tensor]:
        boxes = scale_boxes(boxes)
        scores = box_scores(boxes) + anchor_grid(boxes)
        return {"boxes": boxes, "scores": scores}
