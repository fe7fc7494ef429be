"""What somebody waits for, and when background work may start.

Runs are what somebody waits for: while one is in flight (`busy`; also a command that runs targets,
`foreground()`), fix verification waits, and one that begins preempts it (`lsp/verification.py`).
Background work (verification, precomputing fixes) starts once no run has been in flight for
SETTLE seconds (`when_quiet`): an editor often saves again right after a publish (format-on-save,
"save all", save on focus change), and that run then finds the server and the cores free.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator

SETTLE = 0.25  # seconds with no run in flight before background work starts


class Gate:
    """Counts the work somebody waits for; `on_hold` is called as one begins (verification in flight
    stops now), `on_release` as the last one ends (verification may resume)."""

    def __init__(self, on_hold: Callable[[], None], on_release: Callable[[], None]) -> None:
        self._on_hold, self._on_release = on_hold, on_release
        self._held = 0  # runs (and commands that run targets) in flight
        self._quiet: list[Callable[[], None]] = []  # background work waiting for no run in flight
        self._quiet_timer: asyncio.TimerHandle | None = None

    @property
    def busy(self) -> bool:
        """A run or a command that runs targets is in flight: background work waits."""
        return self._held > 0

    def hold(self) -> None:
        """Work somebody waits for begins: verification in flight stops now (its jobs killed), and
        background work waits for it to end."""
        self._held += 1
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
            self._quiet_timer = None
        self._on_hold()

    def release(self) -> None:
        self._held -= 1
        if self._held == 0:
            self._on_release()
            if self._quiet:
                self._arm_quiet()

    @contextlib.contextmanager
    def foreground(self) -> Iterator[None]:
        """Hold for the length of a command that runs targets (run on all, make it export...)."""
        self.hold()
        try:
            yield
        finally:
            self.release()

    def when_quiet(self, work: Callable[[], None]) -> None:
        """Call `work` once no run has been in flight for SETTLE seconds (once, however often asked)."""
        if work not in self._quiet:
            self._quiet.append(work)
        if not self.busy:
            self._arm_quiet()

    def _arm_quiet(self) -> None:
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        self._quiet_timer = asyncio.get_running_loop().call_later(SETTLE, self._quiet_now)

    def _quiet_now(self) -> None:
        self._quiet_timer = None
        if self.busy:
            return  # release() arms it again
        work, self._quiet = self._quiet, []
        for w in work:
            w()

    def close(self) -> None:
        """Nothing waiting starts any more (the server shuts down)."""
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        self._quiet.clear()
