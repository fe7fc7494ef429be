"""A custom op, as detection libraries ship them (think torchvision.ops.nms), without a fake kernel."""

import torch


@torch.library.custom_op("minilib::decode_boxes", mutates_args=())
def decode_boxes(deltas: torch.Tensor) -> torch.Tensor:
    return deltas[deltas.sum(dim=1) > 0].clone()
