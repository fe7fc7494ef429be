"""The cold baseline: what a user runs without ExportLens — import torch, draft_export, exit."""

import os
import runpy
import sys

import torch

sys.path.insert(0, os.path.dirname(sys.argv[1]))
ns = runpy.run_path(sys.argv[1], run_name="__bench__")
ep = torch.export.draft_export(ns["model"], ns["example_args"], ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
print(ep._report.failures)
