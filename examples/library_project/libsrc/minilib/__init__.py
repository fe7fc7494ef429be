"""minilib: a tiny detection library, written the way real ones are (custom ops, .item(), branches)."""

from minilib.detector import TinyDetector, TwoStageDetector
from minilib.head import DetectionHead
from minilib.postprocess import filter_scores, remove_small_boxes

__all__ = ["DetectionHead", "TinyDetector", "TwoStageDetector", "filter_scores", "remove_small_boxes"]
