"""Multi-scale RoI pooling as torchvision.ops.poolers writes it: each box to an FPN level, then pooled there."""

import torch
from torch import Tensor

from minilib.detection.boxes import box_area


class LevelMapper:
    """Which FPN level each RoI goes to (Eqn. 1 of the FPN paper)."""

    def __init__(self, k_min: int, k_max: int, canonical_scale: int = 224, canonical_level: int = 4, eps: float = 1e-6) -> None:
        self.k_min, self.k_max = k_min, k_max
        self.s0, self.lvl0, self.eps = canonical_scale, canonical_level, eps

    def __call__(self, boxlists: list[Tensor]) -> Tensor:
        s = torch.sqrt(torch.cat([box_area(boxlist) for boxlist in boxlists]))
        target_lvls = torch.floor(self.lvl0 + torch.log2(s / self.s0) + torch.tensor(self.eps, dtype=s.dtype))
        target_lvls = torch.clamp(target_lvls, min=self.k_min, max=self.k_max)
        return (target_lvls.to(torch.int64) - self.k_min).to(torch.int64)


def _convert_to_roi_format(boxes: list[Tensor]) -> Tensor:
    concat_boxes = torch.cat(boxes, dim=0)
    ids = torch.cat([torch.full_like(b[:, :1], i) for i, b in enumerate(boxes)], dim=0)
    return torch.cat([ids, concat_boxes], dim=1)


def roi_pool(feature: Tensor, rois: Tensor, output_size: int, spatial_scale: float) -> Tensor:
    """Each RoI's feature at its centre, repeated over the output grid (a stand-in for roi_align)."""
    height, width = feature.shape[-2:]
    xs = ((rois[:, 1] + rois[:, 3]) * 0.5 * spatial_scale).long().clamp(0, width - 1)
    ys = ((rois[:, 2] + rois[:, 4]) * 0.5 * spatial_scale).long().clamp(0, height - 1)
    picked = feature[rois[:, 0].long(), :, ys, xs]
    return picked[:, :, None, None].expand(-1, -1, output_size, output_size)


def multiscale_roi_pool(features: list[Tensor], boxes: list[Tensor], scales: list[float], mapper: LevelMapper, output_size: int) -> Tensor:
    rois = _convert_to_roi_format(boxes)
    levels = mapper(boxes)

    num_rois = len(rois)
    num_channels = features[0].shape[1]
    result = torch.zeros((num_rois, num_channels, output_size, output_size), dtype=features[0].dtype)
    for level, (per_level_feature, scale) in enumerate(zip(features, scales)):
        idx_in_level = torch.where(levels == level)[0]
        rois_per_level = rois[idx_in_level]
        result[idx_in_level] = roi_pool(per_level_feature, rois_per_level, output_size, scale)
    return result
