"""The cold baseline: what a user runs without ExportLens — import torch, build the model, export it, exit.

`python bench/cold_script.py FILE [plain|draft]`: the user's own `torch.export.export` by default."""

import os
import runpy
import sys

import torch

sys.path.insert(0, os.path.dirname(sys.argv[1]))
ns = runpy.run_path(sys.argv[1], run_name="__bench__")
export = torch.export.draft_export if sys.argv[2:] == ["draft"] else torch.export.export
try:
    export(ns["model"], ns["example_args"], ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
except Exception as exc:  # a failing model: the user sees its error
    print(type(exc).__name__)
