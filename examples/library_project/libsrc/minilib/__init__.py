"""minilib: a tiny detection library, written the way real ones are (custom ops, .item(), branches)."""

from minilib.detector import TinyDetector, TwoStageDetector
from minilib.head import DetectionHead
from minilib.patches import DynamicPatchEmbed, FixedPatchEmbed
from minilib.postprocess import filter_scores, remove_small_boxes

__all__ = ["DetectionHead", "DynamicPatchEmbed", "FixedPatchEmbed", "TinyDetector", "TwoStageDetector", "filter_scores", "remove_small_boxes"]
