"""The benchmarks' 3-block transformer (`transformer.py`) exported with no dynamic_shapes at all: its
batch and its sequence could be dynamic, which is what bench/dynamic_probe.py and the README's
could-be-dynamic diff show (nothing is downloaded: random weights)."""

import torch
from transformer import TinyGPT

torch.manual_seed(0)
model = TinyGPT().eval()
example_args = (torch.randint(0, 1000, (4, 64)),)
