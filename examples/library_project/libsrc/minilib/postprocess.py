"""Post-processing that reads tensor data: fine in eager, a problem for export and compile."""

import torch


def limit_detections(boxes: torch.Tensor, scores: torch.Tensor, max_keep: int) -> torch.Tensor:
    num_kept = (scores > 0.5).sum().item()
    if num_kept > max_keep:
        return boxes[:max_keep]
    return boxes


def filter_scores(scores: torch.Tensor, threshold: float) -> torch.Tensor:
    if scores.max() > threshold:
        return scores * 2
    return scores


def remove_small_boxes(boxes: torch.Tensor, min_size: float) -> torch.Tensor:
    widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (widths >= min_size) & (heights >= min_size)
    return torch.where(keep)[0]
