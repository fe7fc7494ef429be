"""Baseline for the benchmark: repeated draft_export of one target inside one warm process.

`python bench/inprocess_draft.py FILE` loads the target, warms up with one call, then runs one
more draft_export per line read on stdin and answers each with its seconds, so the benchmark
can interleave it with the engine's runs (machine load then hits both alike).
"""

from __future__ import annotations

import os
import runpy
import sys
import time

import torch


def main(path: str) -> None:
    sys.path.insert(0, os.path.dirname(path))
    ns = runpy.run_path(path, run_name="__bench__")

    def once() -> float:
        started = time.perf_counter()
        torch.export.draft_export(ns["model"], ns["example_args"], ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
        return time.perf_counter() - started

    once()
    print("ready", flush=True)
    for _ in sys.stdin:
        print(f"{once():.6f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
