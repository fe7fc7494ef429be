"""LSP work-done progress for one run: begin with the target names, report each phase (importing,
building the model, exporting) and each finished target, end with the problem count. A no-op
when the client cannot show progress.

Creating a token is a round trip to the client, so it happens beside the run rather than
before it: reports and the end that arrive before `begin` went out are held and sent in order.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from exportlens.model import TargetResult

if TYPE_CHECKING:
    from exportlens.lsp.host import Host

CREATE_TIMEOUT = 5.0


class RunProgress:
    def __init__(self, ls: Host | None, names: list[str], on_cancel: Callable[[], object] | None = None) -> None:
        self.ls = ls
        self.names = names
        self.total = max(1, len(names))
        self.done = 0
        self.token: str | None = None
        self.ready = False
        self.held: list[types.WorkDoneProgressReport] = []
        self.end_message: str | None = None
        self.ended = False
        self.on_cancel = on_cancel
        self.opening: asyncio.Task[None] | None = None

    @classmethod
    def start(cls, ls: Host, names: list[str], on_cancel: Callable[[], object]) -> RunProgress:
        """Progress for a run; `on_cancel` runs if the user cancels it in the client."""
        caps = ls.client_capabilities
        if caps is None or caps.window is None or not caps.window.work_done_progress:
            return cls(None, names)
        progress = cls(ls, names, on_cancel)
        progress.opening = asyncio.ensure_future(progress._open())
        return progress

    async def _open(self) -> None:
        ls = self.ls
        assert ls is not None
        token = f"exportlens-{uuid.uuid4().hex[:12]}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), CREATE_TIMEOUT)
        except Exception as exc:  # the client refused or never answered: run without progress
            ls.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=f"no progress: {exc}"))
            self.ls = None
            return
        self.token = token
        loop = asyncio.get_running_loop()
        future = ls.work_done_progress.tokens.get(token)
        if future is not None and self.on_cancel is not None:
            cancel = self.on_cancel
            future.add_done_callback(lambda f: loop.call_soon_threadsafe(cancel) if f.cancelled() else None)
        names = self.names
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(title="ExportLens", message=f"export: {shown}", cancellable=True, percentage=0))
        self.ready = True
        for report in self.held:
            ls.work_done_progress.report(token, report)
        self.held = []
        if self.end_message is not None:
            self._send_end(self.end_message)

    def target(self, tr: TargetResult) -> None:
        self.done += 1
        if self.ls is None or self.end_message is not None:
            return
        pct = min(100, int(100 * self.done / self.total))
        report = types.WorkDoneProgressReport(message=f"{tr.name}: {tr.status} ({self.done}/{self.total})", percentage=pct, cancellable=True)
        self._report(report)

    def phase(self, phase: str, target: str) -> None:
        """What the job is doing now (importing, building the model, exporting...)."""
        if self.ls is None or self.end_message is not None:
            return
        pct = min(100, int(100 * self.done / self.total))
        self._report(types.WorkDoneProgressReport(message=f"{target}: {phase}", percentage=pct, cancellable=True))

    def _report(self, report: types.WorkDoneProgressReport) -> None:
        if self.ready and self.token is not None and self.ls is not None:
            self.ls.work_done_progress.report(self.token, report)
        else:
            self.held.append(report)

    def end(self, message: str) -> None:
        if self.end_message is not None:
            return
        self.end_message = message
        if self.ready:
            self._send_end(message)

    def _send_end(self, message: str) -> None:
        if self.ended or self.ls is None or self.token is None:
            return
        self.ended = True
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)


def problems_text(n: int) -> str:
    return f"{n} problem{'s' if n != 1 else ''}"
