"""Baseline for the benchmarks: repeated export of one target inside one warm process.

`python bench/inprocess_export.py FILE [plain|draft]` loads the target (module-level `model`,
`example_args`, optional `example_kwargs` and `dynamic_shapes`), warms up with one call, then runs
one more export per line read on stdin and answers each with its seconds (to the error, when the
export raises), so a benchmark can interleave it with ExportLens's runs (machine load then hits
both alike). `plain` is the user's own `torch.export.export`; `draft` is `torch.export.draft_export`.
"""

from __future__ import annotations

import os
import runpy
import sys
import time

import torch


def main(path: str, mode: str) -> None:
    sys.path.insert(0, os.path.dirname(path))
    ns = runpy.run_path(path, run_name="__bench__")
    export = torch.export.export if mode == "plain" else torch.export.draft_export

    def once() -> float:
        started = time.perf_counter()
        try:
            export(ns["model"], ns["example_args"], ns.get("example_kwargs"), dynamic_shapes=ns.get("dynamic_shapes"))
        except Exception:
            pass  # a failing target: the time to its error
        return time.perf_counter() - started

    once()
    print("ready", flush=True)
    for _ in sys.stdin:
        print(f"{once():.6f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "draft")
