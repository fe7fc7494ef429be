"""The same library model declared with module-level variables: its problems go on the `model =` line."""

import torch
from minilib import TinyDetector

model = TinyDetector(max_keep=1).eval()
example_args = (torch.tensor([[2.0, 1.0, 0.5, 1.0], [1.0, 1.0, 1.0, 1.0], [-3.0, 0.0, 1.0, 0.0]]),)
