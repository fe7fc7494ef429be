"""What a long `exportlens check` is doing, on stderr: the target, its phase and the time so far.

Quiet for short runs: a target is named once it has run `FIRST` seconds, then every `EVERY`
seconds, and again when its phase changes after that. Never on stdout (JSON/SARIF stay clean).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from exportlens.model import ERROR, Diagnostic

FIRST = 3.0
EVERY = 10.0
TICK = 0.5


@dataclass
class _Running:
    target: str
    phase: str
    since: float  # when this target's first phase arrived
    told: float | None = None  # when it was last printed
    told_phase: str = ""


class CliProgress:
    """Fed by the engine's phase events; a ticker prints the targets that run long."""

    def __init__(self, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic, first: float = FIRST, every: float = EVERY) -> None:
        self.out = out if out is not None else sys.stderr
        self.clock = clock
        self.first = first
        self.every = every
        self.running: dict[str, _Running] = {}  # file → its current target

    def phase(self, path: str, phase: str, target: str) -> None:
        now = self.clock()
        cur = self.running.get(path)
        if cur is None or cur.target != target:
            self.running[path] = _Running(target, phase, now)
            return
        cur.phase = phase

    def failed(self, path: str, findings: list[Diagnostic]) -> None:
        """The user's export of the running target failed: its first error becomes the phase (draft
        export now runs to find the rest), told at the next tick once the target runs long."""
        cur = self.running.get(path)
        first = next((d for d in findings if d.severity == ERROR), None)
        if cur is None or first is None:
            return
        where = f"{os.path.basename(first.file)}:{first.range.start.line + 1}"
        cur.phase = f"torch.export.export failed ({first.code} at {where}); draft export is finding the rest"

    def file_done(self, path: str) -> None:
        self.running.pop(os.path.abspath(path), None)
        self.running.pop(path, None)

    def tick(self) -> None:
        now = self.clock()
        for cur in self.running.values():
            elapsed = now - cur.since
            due = (cur.told is None and elapsed >= self.first) or (cur.told is not None and (now - cur.told >= self.every or cur.phase != cur.told_phase))
            if due:
                cur.told, cur.told_phase = now, cur.phase
                print(f"exportlens: {cur.target} — {cur.phase}, {elapsed:.0f} s", file=self.out, flush=True)

    async def run(self) -> None:
        """Tick until cancelled."""
        while True:
            await asyncio.sleep(TICK)
            self.tick()
