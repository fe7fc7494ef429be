"""What the benchmarks measure ExportLens against: the user's own export, in a warm process or cold."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "server")}


class InProcess:
    """The baseline process for one target (`bench/inprocess_export.py`), answering one timed export per request."""

    def __init__(self, path: Path, mode: str = "draft") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "bench/inprocess_export.py"), str(path), mode],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def once(self) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def timed(cmd: list[str]) -> float:
    """Seconds of one whole process, start to exit."""
    started = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=ENV)
    return time.perf_counter() - started
