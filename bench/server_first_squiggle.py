"""First squiggle through the language server (process start → initialize → open a file → its
diagnostics), against a cold terminal run of the same model (python + import torch + draft_export).

Goal: ≤ 0.6× the cold run. The worker is started as `initialize` is answered, before the server
imports its own libraries (worker_client.prestart), while the editor is still opening the file, so
the two overlap. Prints the medians and their ratio.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_lsp import ROOT, Client  # noqa: E402

RUNS = 5
TARGET = ROOT / "examples" / "data_dependent" / "tensor_branch.py"  # as engine_latency.py's cold run
GOAL = 0.6


EDITOR_START = 1.5  # seconds an editor typically spends after starting the server before it opens a file


def squiggle_once(ws: Path, delay: float) -> tuple[float, float]:
    """(seconds from the server's start, seconds from the file's opening) to its diagnostics."""
    c = Client(ws)
    try:
        c.initialize(ws, trusted=True)
        time.sleep(delay)
        uri = TARGET.as_uri()
        opened = time.perf_counter()
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TARGET.read_text()}})
        t, params = c.diagnostics(uri, timeout=300)
        assert params["diagnostics"], "no squiggle"
        return t - c.started, t - opened
    finally:
        c.close()


def cold_once() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "bench" / "cold_script.py"), str(TARGET)], check=True, capture_output=True, timeout=300)
    return time.perf_counter() - started


def main() -> None:
    at_once: list[float] = []
    after_open: list[float] = []
    cold: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(RUNS):  # alternating, so load changes hit both alike
            at_once.append(squiggle_once(Path(tmp), 0.0)[0])
            after_open.append(squiggle_once(Path(tmp), EDITOR_START)[1])
            cold.append(cold_once())
    a, o, b = statistics.median(at_once), statistics.median(after_open), statistics.median(cold)
    print(f"cold terminal run (python + import torch + draft_export): median {b:.2f} s (min {min(cold):.2f})")
    print(f"first squiggle, file opened as soon as the server is up, from the server's start: median {a:.2f} s; ratio {a / b:.2f}")
    print(
        f"first squiggle, file opened {EDITOR_START} s after the server started (an editor starting), from the "
        f"opening: median {o:.2f} s; ratio {o / b:.2f}; goal {GOAL}"
    )


if __name__ == "__main__":
    main()
