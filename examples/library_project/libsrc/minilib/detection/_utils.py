"""The box coder and the k of a topk, as torchvision.models.detection._utils writes them."""

import math

import torch
from torch import Tensor


class BoxCoder:
    """Encodes boxes as offsets from reference boxes (anchors, proposals) and decodes them back."""

    def __init__(self, weights: tuple[float, float, float, float], bbox_xform_clip: float = math.log(1000.0 / 16)) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def decode(self, rel_codes: Tensor, boxes: list[Tensor]) -> Tensor:
        boxes_per_image = [b.size(0) for b in boxes]
        concat_boxes = torch.cat(boxes, dim=0)
        box_sum = 0
        for val in boxes_per_image:
            box_sum += val
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred_boxes = self.decode_single(rel_codes, concat_boxes)
        if box_sum > 0:
            pred_boxes = pred_boxes.reshape(box_sum, -1, 4)
        return pred_boxes

    def decode_single(self, rel_codes: Tensor, boxes: Tensor) -> Tensor:
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights

        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = rel_codes[:, 2::4] / ww
        dh = rel_codes[:, 3::4] / wh

        dw = torch.clamp(dw, max=self.bbox_xform_clip)
        dh = torch.clamp(dh, max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        pred_w = torch.exp(dw) * widths[:, None]
        pred_h = torch.exp(dh) * heights[:, None]
        x1, y1 = pred_ctr_x - 0.5 * pred_w, pred_ctr_y - 0.5 * pred_h
        x2, y2 = pred_ctr_x + 0.5 * pred_w, pred_ctr_y + 0.5 * pred_h
        return torch.stack((x1, y1, x2, y2), dim=2).flatten(1)


def _topk_min(input: Tensor, orig_kval: int, axis: int) -> int:
    """The k of a topk: at most the number of elements along `axis`."""
    return min(orig_kval, input.size(axis))
