"""minilib: a tiny detection library, written the way real ones are (custom ops, .item(), branches)."""

from minilib.detector import TinyDetector
from minilib.postprocess import filter_scores

__all__ = ["TinyDetector", "filter_scores"]
