"""The model class users import: a backbone, a custom op and post-processing."""

import torch

from minilib.ops import decode_boxes
from minilib.postprocess import limit_detections


class TinyDetector(torch.nn.Module):
    def __init__(self, max_keep: int = 2) -> None:
        super().__init__()
        self.backbone = torch.nn.Linear(4, 4)
        self.max_keep = max_keep

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        boxes = decode_boxes(images)
        if boxes.shape[0] == 0:
            return boxes
        scores = images.sigmoid().amax(dim=1)
        kept = limit_detections(boxes, scores, self.max_keep)
        return self.backbone(kept)


class TwoStageDetector(torch.nn.Module):
    """Proposals, then detections: both stages keep the best boxes with the same helper."""

    def forward(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        proposals = self.propose(boxes, scores)
        return self.detect(proposals, scores)

    def propose(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return limit_detections(boxes, scores, 3)

    def detect(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return limit_detections(boxes, scores[: boxes.shape[0]], 1)
