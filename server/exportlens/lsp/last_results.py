"""On open, a document's last results at once: the results cache's last entry, shown until a run replaces it.

After a restart the editor would show nothing for a file until it ran again. When the document is
opened (trusted workspace, the cache on) and the server holds no result of it yet, its last stored
run (`Engine.last_result`: no worker, no user code) is published at once. One that still holds
(nothing it depends on changed) is marked as reused, like the run's answer will be; one that no
longer holds is marked as from the last run with its time (`cached` with `confirmed: False`, said
in the hover), its ranges carried onto the editor's text like any result's, and only where a run
follows that replaces it (a .py file's open starts one; a notebook runs on save, so it gets only
a last result that holds). A result kept before this one arrives wins.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from exportlens import document
from exportlens.lsp.engines import Engines
from exportlens.lsp.host import Host
from exportlens.lsp.publisher import Publisher


class LastResults:
    def __init__(self, ls: Host, engines: Engines, publisher: Publisher) -> None:
        self.ls = ls
        self.engines = engines
        self.publisher = publisher

    def show(self, path: str, text: str | None = None, *, run_follows: bool = True) -> None:
        """Publish `path`'s last stored result soon, unless a result of it is kept by then; without
        `run_follows`, only one that still holds."""
        if path not in self.publisher.results:
            self.ls.background(self._show(path, text, run_follows))

    async def _show(self, path: str, text: str | None, run_follows: bool) -> None:
        engine = self.engines.current()
        try:
            result = await engine.last_result(document.load(path, text))
        except Exception as exc:  # a bug here must cost only the early view, never the run
            self.ls.log(f"cannot show the last results of {path}: {type(exc).__name__}: {exc}", types.MessageType.Warning)
            return
        if result is None or result.cached is None or path in self.publisher.results:
            return
        if result.cached.pop("holds", True) is False:
            if not run_follows:
                return
            result.cached["confirmed"] = False
        self.publisher.keep(path, result, None)


def came_from(cached: dict[str, Any] | None) -> str | None:
    """The hover's line for a result from the cache: not run again yet, or reused; None for a fresh run."""
    if not cached:
        return None
    when = cached.get("finished") or "an earlier run"
    if cached.get("confirmed") is False:
        return f"*From the last run ({when}), shown before this file runs again: the run replaces it.*"
    return f"*Reused from the run of {when}: nothing it depends on changed since.*"
