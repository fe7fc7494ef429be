"""Detection models written the way torchvision.models.detection writes them, small enough for CI.

The guards torch meets in torchvision's detectors come from a handful of patterns, reproduced here
file by file: size checks on a data-dependent number of boxes (`boxes.py`: `boxes.numel() > 4000`),
an NMS custom op whose output size comes from the data (`boxes.py`), the box coder's sums and
reshapes over data-dependent counts (`_utils.py`), the poolers' level mapping (`poolers.py`:
`len(rois)`), and the heads' `topk` over what survived the score threshold (`roi_heads.py`).
Weights are made from a fixed seed, never downloaded.
"""

from minilib.detection.models import fasterrcnn_tiny_320_fpn, fasterrcnn_tiny_fpn, ssdlite_tiny

__all__ = ["fasterrcnn_tiny_320_fpn", "fasterrcnn_tiny_fpn", "ssdlite_tiny"]
