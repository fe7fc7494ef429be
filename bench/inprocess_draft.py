"""Baseline for the benchmark: repeated draft_export of one target inside one process.

`python bench/inprocess_draft.py FILE REPEATS` prints a JSON list of seconds per call after one
warm-up call (the same work the engine's warm worker does per job, minus the fork and the IPC).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import time

import torch


def main(path: str, repeats: int) -> list[float]:
    sys.path.insert(0, os.path.dirname(path))
    ns = runpy.run_path(path, run_name="__bench__")
    args = ns["example_args"]
    times = []
    for i in range(repeats + 1):
        started = time.perf_counter()
        torch.export.draft_export(ns["model"], args, ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
        if i:
            times.append(time.perf_counter() - started)
    return times


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
