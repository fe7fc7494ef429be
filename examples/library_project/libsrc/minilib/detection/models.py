"""Tiny detectors and the factory functions users call, as torchvision.models.detection offers them
(`fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None)`). Weights come from a
fixed seed (`layers.py`): nothing is downloaded, and every build of a model is the same model."""

import torch
import torch.nn.functional as F
from torch import Tensor

from minilib.detection import boxes as box_ops
from minilib.detection._utils import BoxCoder, _topk_min
from minilib.detection.layers import FrozenConv2d
from minilib.detection.roi_heads import RoIHeads


def _anchors(height: int, width: int, stride: int, sizes: tuple[int, ...]) -> Tensor:
    """Square anchors of each size centred on every cell of a feature map (static: no data)."""
    ys, xs = torch.meshgrid(torch.arange(height) * stride + stride / 2, torch.arange(width) * stride + stride / 2, indexing="ij")
    centres = torch.stack([xs, ys, xs, ys], dim=-1).reshape(-1, 1, 4)
    half = torch.tensor([[-s / 2, -s / 2, s / 2, s / 2] for s in sizes])
    return (centres + half).reshape(-1, 4)


class Backbone(torch.nn.Module):
    """Two feature maps (strides 8 and 16), an FPN in miniature."""

    def __init__(self, channels: int, gen: torch.Generator) -> None:
        super().__init__()
        self.stem = FrozenConv2d(3, channels, 8, 8, gen)
        self.down = FrozenConv2d(channels, channels, 2, 2, gen)

    def forward(self, images: Tensor) -> list[Tensor]:
        first = F.relu(self.stem(images))
        return [first, F.relu(self.down(first))]


class RegionProposalNetwork(torch.nn.Module):
    def __init__(self, channels: int, sizes: tuple[int, ...], pre_nms_top_n: int, post_nms_top_n: int, score_thresh: float, gen: torch.Generator) -> None:
        super().__init__()
        self.sizes = sizes
        self.objectness = FrozenConv2d(channels, len(sizes), 1, 1, gen)
        self.deltas = FrozenConv2d(channels, len(sizes) * 4, 1, 1, gen)
        self.box_coder = BoxCoder((1.0, 1.0, 1.0, 1.0))
        self._pre_nms_top_n = pre_nms_top_n
        self.post_nms_top_n = post_nms_top_n
        self.nms_thresh = 0.7
        self.score_thresh = score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self) -> int:
        return self._pre_nms_top_n

    def forward(self, images: Tensor, features: list[Tensor]) -> list[Tensor]:
        height, width = images.shape[-2:]
        anchors = torch.cat([_anchors(f.shape[-2], f.shape[-1], height // f.shape[-2], self.sizes) for f in features])
        objectness = torch.cat([self.objectness(f).permute(0, 2, 3, 1).reshape(f.shape[0], -1) for f in features], dim=1)
        deltas = torch.cat([self.deltas(f).permute(0, 2, 3, 1).reshape(f.shape[0], -1, 4) for f in features], dim=1)
        levels = torch.cat([torch.full((f.shape[-2] * f.shape[-1] * len(self.sizes),), i, dtype=torch.int64) for i, f in enumerate(features)])
        proposals = self.box_coder.decode(deltas.reshape(-1, 4), [anchors]).reshape(images.shape[0], -1, 4)
        return self.filter_proposals(proposals, objectness, levels, (int(height), int(width)))

    def filter_proposals(self, proposals: Tensor, objectness: Tensor, levels: Tensor, image_shape: tuple[int, int]) -> list[Tensor]:
        pre_nms_top_n = _topk_min(objectness, self.pre_nms_top_n(), 1)
        _, top_n_idx = objectness.topk(pre_nms_top_n, dim=1)
        final_boxes = []
        for boxes, scores, idx in zip(proposals, objectness, top_n_idx):
            boxes, scores, lvl = boxes[idx], torch.sigmoid(scores[idx]), levels[idx]
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            keep = box_ops.remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = torch.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)
            keep = keep[: self.post_nms_top_n]
            final_boxes.append(boxes[keep])
        return final_boxes


class TinyFasterRCNN(torch.nn.Module):
    """A backbone, a region proposal network, RoI heads: the shape of torchvision's Faster R-CNN."""

    def __init__(self, num_classes: int, pre_nms_top_n: int, post_nms_top_n: int, rpn_score_thresh: float, topk_candidates: int, seed: int) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.backbone = Backbone(8, gen)
        self.rpn = RegionProposalNetwork(8, (32, 64, 128), pre_nms_top_n, post_nms_top_n, rpn_score_thresh, gen)
        self.roi_heads = RoIHeads(8, num_classes, [1 / 8, 1 / 16], topk_candidates, gen)

    def forward(self, images: Tensor) -> dict[str, Tensor]:
        features = self.backbone(images)
        proposals = self.rpn(images, features)
        return self.roi_heads(features, proposals, [(int(images.shape[-2]), int(images.shape[-1]))])


class TinySSDLite(torch.nn.Module):
    """One-stage: per-anchor class scores and box offsets, then per-class topk and NMS (torchvision's SSD)."""

    def __init__(self, num_classes: int, seed: int, topk_candidates: int = 600, detections_per_img: int = 20) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.backbone = Backbone(8, gen)
        self.sizes = (32, 64)
        self.cls_logits = FrozenConv2d(8, len(self.sizes) * num_classes, 1, 1, gen)
        self.bbox_regression = FrozenConv2d(8, len(self.sizes) * 4, 1, 1, gen)
        self.num_classes = num_classes
        self.box_coder = BoxCoder((10.0, 10.0, 5.0, 5.0))
        self.score_thresh = 0.01
        self.nms_thresh = 0.45
        self.topk_candidates = topk_candidates
        self.detections_per_img = detections_per_img

    def forward(self, images: Tensor) -> dict[str, Tensor]:
        features = self.backbone(images)
        height, width = images.shape[-2:]
        anchors = torch.cat([_anchors(f.shape[-2], f.shape[-1], height // f.shape[-2], self.sizes) for f in features])
        logits = torch.cat([self.cls_logits(f).permute(0, 2, 3, 1).reshape(-1, self.num_classes) for f in features])
        regression = torch.cat([self.bbox_regression(f).permute(0, 2, 3, 1).reshape(-1, 4) for f in features])
        return self.postprocess_detections(regression, F.softmax(logits, dim=-1), anchors, (int(height), int(width)))

    def postprocess_detections(self, regression: Tensor, scores: Tensor, anchors: Tensor, image_shape: tuple[int, int]) -> dict[str, Tensor]:
        boxes = self.box_coder.decode_single(regression, anchors)
        boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
        image_boxes, image_scores, image_labels = [], [], []
        for label in range(1, self.num_classes):
            score = scores[:, label]
            keep_idxs = score > self.score_thresh
            score = score[keep_idxs]
            box = boxes[keep_idxs]
            # keep only topk scoring predictions
            num_topk = _topk_min(score, self.topk_candidates, 0)
            score, idxs = score.topk(num_topk)
            box = box[idxs]
            image_boxes.append(box)
            image_scores.append(score)
            image_labels.append(torch.full_like(score, fill_value=label, dtype=torch.int64))
        image_boxes = torch.cat(image_boxes, dim=0)
        image_scores = torch.cat(image_scores, dim=0)
        image_labels = torch.cat(image_labels, dim=0)
        keep = box_ops.batched_nms(image_boxes, image_scores, image_labels, self.nms_thresh)
        keep = keep[: self.detections_per_img]
        return {"boxes": image_boxes[keep], "scores": image_scores[keep], "labels": image_labels[keep]}


def fasterrcnn_tiny_320_fpn(*, weights: None = None, weights_backbone: None = None, num_classes: int = 3) -> TinyFasterRCNN:
    """The small one: up to 1200 proposals, but under 1000 score high enough, so NMS takes the coordinate trick."""
    return TinyFasterRCNN(num_classes, pre_nms_top_n=1200, post_nms_top_n=20, rpn_score_thresh=0.5, topk_candidates=30, seed=0).eval()


def fasterrcnn_tiny_fpn(*, weights: None = None, weights_backbone: None = None, num_classes: int = 3) -> TinyFasterRCNN:
    """The large one: 2000 proposals before NMS, so NMS takes the vanilla loop over categories."""
    return TinyFasterRCNN(num_classes, pre_nms_top_n=2000, post_nms_top_n=40, rpn_score_thresh=0.0, topk_candidates=60, seed=1).eval()


def ssdlite_tiny(*, weights: None = None, weights_backbone: None = None, num_classes: int = 3) -> TinySSDLite:
    return TinySSDLite(num_classes, seed=2).eval()
