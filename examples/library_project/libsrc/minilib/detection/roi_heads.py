"""The second stage of a two-stage detector, as torchvision.models.detection.roi_heads writes it."""

import torch
import torch.nn.functional as F
from torch import Tensor

from minilib.detection import boxes as box_ops
from minilib.detection._utils import BoxCoder, _topk_min
from minilib.detection.layers import FrozenLinear
from minilib.detection.poolers import LevelMapper, multiscale_roi_pool


class RoIHeads(torch.nn.Module):
    def __init__(self, channels: int, num_classes: int, scales: list[float], topk_candidates: int, gen: torch.Generator, detections_per_img: int = 20) -> None:
        super().__init__()
        self.scales = scales
        self.mapper = LevelMapper(2, 2 + len(scales) - 1, canonical_scale=64, canonical_level=3)
        self.box_head = FrozenLinear(channels * 4, 32, gen)
        self.cls_score = FrozenLinear(32, num_classes, gen)
        self.bbox_pred = FrozenLinear(32, num_classes * 4, gen)
        self.box_coder = BoxCoder((10.0, 10.0, 5.0, 5.0))
        self.score_thresh = 0.05
        self.nms_thresh = 0.5
        self.topk_candidates = topk_candidates
        self.detections_per_img = detections_per_img

    def forward(self, features: list[Tensor], proposals: list[Tensor], image_shapes: list[tuple[int, int]]) -> dict[str, Tensor]:
        box_features = multiscale_roi_pool(features, proposals, self.scales, self.mapper, 2)
        box_features = F.relu(self.box_head(box_features.flatten(1)))
        class_logits, box_regression = self.cls_score(box_features), self.bbox_pred(box_features)
        return self.postprocess_detections(class_logits, box_regression, proposals, image_shapes)

    def postprocess_detections(self, class_logits: Tensor, box_regression: Tensor, proposals: list[Tensor], image_shapes: list[tuple[int, int]]) -> dict[str, Tensor]:
        num_classes = class_logits.shape[-1]
        boxes_per_image = [boxes_in_image.shape[0] for boxes_in_image in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals)
        pred_scores = F.softmax(class_logits, -1)
        pred_boxes_list = pred_boxes.split(boxes_per_image, 0)
        pred_scores_list = pred_scores.split(boxes_per_image, 0)

        for boxes, scores, image_shape in zip(pred_boxes_list, pred_scores_list, image_shapes):
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            labels = torch.arange(num_classes)
            labels = labels.view(1, -1).expand_as(scores)

            # remove predictions with the background label
            boxes = boxes[:, 1:]
            scores = scores[:, 1:]
            labels = labels[:, 1:]
            boxes = boxes.reshape(-1, 4)
            scores = scores.reshape(-1)
            labels = labels.reshape(-1)

            inds = torch.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
            keep = box_ops.remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]

            # keep only the best candidates
            num_topk = _topk_min(scores, self.topk_candidates, 0)
            scores, idxs = scores.topk(num_topk)
            boxes, labels = boxes[idxs], labels[idxs]

            keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)
            keep = keep[: self.detections_per_img]
            return {"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]}
        raise ValueError("no image")
